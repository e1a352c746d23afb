package web_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

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

