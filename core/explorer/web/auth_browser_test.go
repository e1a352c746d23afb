package web_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/explorer/web/browsertest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// browserFor opens Chromium on srv with token as the user's bearer token ("" sends
// none), trusting exactly the server's key.
func browserFor(t *testing.T, srv *apiservertest.Server, token string) *browsertest.Browser {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := browsertest.SPKIHash(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	o := browsertest.Options{TrustSPKI: []string{spki}}
	if token != "" {
		o.Header = map[string]string{"Authorization": "Bearer " + token}
	}
	return browsertest.Start(t, o)
}

// An anonymous client gets 401 for the page, its assets and a pod's page, from Go and in
// the browser; the admin's token gets the page.
func TestExplorerPageNeedsCredentials(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithLogger(quiet()))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.API.CACertPEM())
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, p := range []string{"/explorer/", "/explorer/static/app.js", "/explorer/pods/default/web"} {
		resp, err := hc.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "<html") {
			t.Fatalf("anonymous GET %s: %d %q, want 401 and no page", p, resp.StatusCode, body)
		}
	}
	anon := browserFor(t, srv, "")
	if st := anon.Open(srv.URL + "/explorer/"); st != http.StatusUnauthorized {
		t.Fatalf("anonymous browser: %d, want 401", st)
	}
	if n := browsertest.MustEval[int](anon, `document.querySelectorAll("#main").length`); n != 0 {
		t.Fatal("the anonymous browser got the page")
	}
	anon.Screenshot("anonymous")

	admin := browserFor(t, srv, srv.Config.BearerToken)
	if st := admin.Open(srv.URL + "/explorer"); st != http.StatusOK {
		t.Fatalf("admin: %d, want 200 (after the redirect to /explorer/)", st)
	}
	admin.WaitFor(`document.querySelector("h1") && document.querySelector("h1").textContent === "Decisions"`, "the home page")
}

// Through `kubectl proxy` (the documented way in: it adds the kubeconfig's credential),
// mounted under a prefix of its own, the page loads with relative URLs and follows new
// records live over server-sent events through the proxy.
func TestExplorerPageThroughKubectlProxy(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl not found: %v", err)
	}
	srv := apiservertest.Start(t, apiservertest.WithLogger(quiet()))
	const port = "31201"
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kubectl, "proxy", "--kubeconfig", srv.KubeconfigPath, "--address", "127.0.0.1", "--port", port, "--api-prefix", "/k8s/")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	base := "http://127.0.0.1:" + port + "/k8s/explorer/"
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		resp, err := http.Get(base)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("kubectl proxy did not serve %s: %v\n%s", base, err, out.String())
	}
	create := func(name string) {
		t.Helper()
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("before")
	b := browsertest.Start(t, browsertest.Options{}) // no credential: the proxy adds it
	if st := b.Open(base); st != http.StatusOK {
		t.Fatalf("page through kubectl proxy: %d", st)
	}
	b.WaitFor(`document.querySelector('input[data-filter="routine"]')`, "the home page's filters")
	// No policy took part in these requests: show them.
	b.Click(`input[data-filter="routine"]`)
	row := func(name string) string {
		return `[...document.querySelectorAll(".timeline-table tr")].some((tr) => tr.textContent.includes("CREATE pods default/` + name + `"))`
	}
	b.WaitFor(row("before"), "the pod created before the page was opened")
	b.WaitFor(`document.querySelector("#live").dataset.state === "live"`, "the live stream through the proxy")
	create("after")
	b.WaitFor(row("after"), "the pod created while the page was open, live")
	href := browsertest.MustEval[string](b, `[...document.querySelectorAll(".timeline-table tr")].find((tr) => tr.textContent.includes("CREATE pods default/after")).querySelector("td.summary a").href`)
	if !strings.HasPrefix(href, "http://127.0.0.1:"+port+"/k8s/explorer/requests/") {
		t.Fatalf("link %s leaves the proxy's prefix", href)
	}
	b.Open(href)
	b.WaitFor(`document.querySelector("h1") && document.querySelector("h1").textContent.includes("default/after")`, "the request page through the proxy")
	b.Screenshot("request-through-proxy")
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("page errors: %q", errs)
	}
}
