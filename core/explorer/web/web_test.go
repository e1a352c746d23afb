package web

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		rest string
		want Page
	}{
		{"", Page{View: ViewHome, Base: "./"}},
		{"pods/default/web-0", Page{View: ViewPod, Args: []string{"default", "web-0"}, Base: "../../"}},
		{"pods/default/web-0/", Page{View: ViewPod, Args: []string{"default", "web-0"}, Base: "../../../"}},
		{"requests/41", Page{View: ViewRequest, Args: []string{"41"}, Base: "../"}},
		{"policies/no-latest-tag", Page{View: ViewPolicy, Args: []string{"no-latest-tag"}, Base: "../"}},
		{"nodes/hollow-1", Page{View: ViewNode, Args: []string{"hollow-1"}, Base: "../"}},
		{"static/app.js", Page{View: ViewAsset, Args: []string{"app.js"}, Base: "../"}},
	} {
		got, err := Route(tc.rest)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Route(%q) = %+v, %v; want %+v", tc.rest, got, err, tc.want)
		}
	}
	for _, rest := range []string{"pods", "pods/default", "pods/default/a/b", "requests/", "static/", "static/../web.go", "x"} {
		if p, err := Route(rest); !errors.Is(err, ErrNotFound) {
			t.Errorf("Route(%q) = %+v, %v; want ErrNotFound", rest, p, err)
		}
	}
}

func TestHandlerServesShellAndAssets(t *testing.T) {
	h := Handler()
	get := func(path string) *http.Response {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Result()
	}
	r := get("/explorer/pods/default/web-0")
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 || !strings.Contains(string(body), `<base href="../../">`) || !strings.Contains(string(body), `data-view="pod"`) ||
		!strings.Contains(string(body), `data-arg1="web-0"`) {
		t.Fatalf("pod page: %d\n%s", r.StatusCode, body)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Fatalf("pod page CSP %q", csp)
	}
	for _, a := range []struct{ path, ct string }{
		{"/explorer/static/app.js", "text/javascript"}, {"/explorer/static/pod.js", "text/javascript"},
		{"/explorer/static/style.css", "text/css"}, {"/explorer/static/icon.svg", "image/svg+xml"},
	} {
		if r := get(a.path); r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), a.ct) {
			t.Errorf("%s: %d %q, want 200 %s", a.path, r.StatusCode, r.Header.Get("Content-Type"), a.ct)
		}
	}
	if r := get("/explorer/static/nope.js"); r.StatusCode != 404 {
		t.Errorf("missing asset: %d", r.StatusCode)
	}
	if r := get("/explorer"); r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != "explorer/" {
		t.Errorf("/explorer: %d Location %q, want a relative redirect to explorer/", r.StatusCode, r.Header.Get("Location"))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/explorer/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

// The page loads nothing from another origin: every src/href/import in the assets is
// relative.
func TestAssetsAreSelfContained(t *testing.T) {
	entries, err := static.ReadDir("static")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := static.ReadFile("static/" + e.Name())
		s := string(b)
		for _, bad := range []string{"http://", "https://", "//cdn", "@import url("} {
			if i := strings.Index(s, bad); i >= 0 && !strings.Contains(s[max(0, i-40):i], "xmlns=") {
				t.Errorf("%s refers to another origin: %q", e.Name(), s[max(0, i-20):min(len(s), i+40)])
			}
		}
	}
}
