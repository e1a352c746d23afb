package apiserver_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestReadyzChecks: /readyz lists etcd and the checks components added; an added check
// that fails makes /readyz and /healthz 500 (not /livez), /readyz/<name> answers for one
// check, ?exclude leaves one out, all without a token.
func TestReadyzChecks(t *testing.T) {
	srv := apiservertest.Start(t)
	anon := rest.AnonymousClientConfig(srv.Config)
	hc, err := rest.HTTPClientFor(anon)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	expect := func(path string, code int, contains ...string) {
		t.Helper()
		gotCode, body := get(path)
		if gotCode != code {
			t.Errorf("GET %s = %d, want %d:\n%s", path, gotCode, code, body)
		}
		for _, c := range contains {
			if !strings.Contains(body, c) {
				t.Errorf("GET %s: body lacks %q:\n%s", path, c, body)
			}
		}
	}
	expect("/readyz", http.StatusOK, "ok")
	expect("/readyz?verbose", http.StatusOK, "[+]ping ok\n", "[+]etcd ok\n", "[+]started ok\n", "readyz check passed")

	var schedErr atomic.Pointer[error]
	srv.API.AddReadyzCheck("scheduler", func() error {
		if p := schedErr.Load(); p != nil {
			return *p
		}
		return nil
	})
	srv.API.AddReadyzCheck("controller-manager", func() error { return nil })
	expect("/readyz?verbose", http.StatusOK, "[+]scheduler ok\n", "[+]controller-manager ok\n")
	stopped := errors.New("stopped for 3s")
	schedErr.Store(&stopped)
	expect("/readyz", http.StatusInternalServerError, "[-]scheduler failed: stopped for 3s\n", "[+]etcd ok\n", "readyz check failed")
	expect("/healthz", http.StatusInternalServerError, "[-]scheduler failed: stopped for 3s\n", "healthz check failed")
	expect("/livez", http.StatusOK, "ok")
	expect("/readyz/scheduler", http.StatusInternalServerError, "[-]scheduler failed: stopped for 3s")
	expect("/readyz/etcd", http.StatusOK, "ok")
	expect("/readyz/controller-manager", http.StatusOK, "ok")
	expect("/readyz/nope", http.StatusNotFound, `no readyz check named "nope"`)
	expect("/readyz?exclude=scheduler&verbose", http.StatusOK, "[+]scheduler excluded: ok\n", "readyz check passed")
	schedErr.Store(nil)
	expect("/readyz", http.StatusOK, "ok")
	// Deeper paths are not health checks: they need a token like any other path.
	expect("/readyz/scheduler/x", http.StatusUnauthorized)
}
