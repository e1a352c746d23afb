// Package thresholdtest holds the verdicts every version of the threshold-liveness plugin
// (wasm-examples/go/threshold-liveness, wasm-examples/c/threshold-liveness) must give, and
// runs a built module through the kubelet's host against them.
package thresholdtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
)

// Args are the args of Cases, but for the port (Check adds its test server's).
const Args = `"path": "/metrics", "metric": "errors_total", "max": 10`

// Case is what the pod answers to GET /metrics and the probe's code and reason.
type Case struct {
	Status int
	Body   string
	Code   int32
	Reason string
}

// Cases are the verdicts for Args.
var Cases = []Case{
	{200, "errors_total 3\n", 0, ""},
	{200, "errors_total 10\n", 0, ""},
	{200, "# HELP errors_total Errors.\n# TYPE errors_total counter\nerrors_total 12\n", 2, "errors_total is 12, above the max 10"},
	{200, "errors_total 10.5", 2, "errors_total is 10.5, above the max 10"},
	{200, "errors_total 1.2e1\r\n", 2, "errors_total is 1.2e1, above the max 10"},
	{200, "errors_total 9.99e0 1700000000000\n", 0, ""},
	{200, "errors_total{code=\"500\"} 99\nerrors_total_sum 99\nerrors_total 1\n", 0, ""},
	{200, "requests_total 5\nerrors_total_sum 99\n", 2, `GET /metrics: no line "errors_total <number>"`},
	{200, "", 2, `GET /metrics: no line "errors_total <number>"`},
	{200, "errors_total\n", 2, `GET /metrics: no line "errors_total <number>"`},
	{200, "errors_total lots\n", 2, `errors_total: "lots" is not a number`},
	{200, "errors_total 0x10\n", 2, `errors_total: "0x10" is not a number`},
	{200, "errors_total " + strings.Repeat("9", 40) + "\n", 2, "errors_total is " + strings.Repeat("9", 32) + "..., above the max 10"},
	{200, "errors_total NaN\n", 2, "errors_total is NaN"},
	{200, "errors_total +Inf\n", 2, "errors_total is +Inf, above the max 10"},
	{200, "errors_total -Inf\n", 0, ""},
	{200, "errors_total -3\n", 0, ""},
	{200, "\terrors_total \t 4 \n", 0, ""},
	{503, "errors_total 0\n", 2, "GET /metrics: HTTP 503"},
	{301, "", 2, "GET /metrics: HTTP 301"},
}

// Check loads the module at path with Args and probes a loopback server answering each
// of Cases in turn, then one that is down.
func Check(t *testing.T, path string) {
	var mu sync.Mutex
	var cur Case
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		c := cur
		mu.Unlock()
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.WriteHeader(c.Status)
		_, _ = w.Write([]byte(c.Body))
	}))
	defer srv.Close()
	port := nodewasmtest.Port(t, srv)
	p := nodewasmtest.Load(t, path, fmt.Sprintf(`{"port": %d, %s}`, port, Args))
	for _, c := range Cases {
		mu.Lock()
		cur = c
		mu.Unlock()
		got := p.Probe(t, "liveness", time.Second)
		if got.Err != nil || got.Code != c.Code || got.Reason != c.Reason {
			t.Errorf("HTTP %d %q: code %d reason %q (err %v), want %d %q", c.Status, c.Body, got.Code, got.Reason, got.Err, c.Code, c.Reason)
		}
	}
	srv.Close()
	want := fmt.Sprintf("GET :%d/metrics: connection refused", port)
	if got := p.Probe(t, "liveness", time.Second); got.Code != 2 || got.Reason != want {
		t.Errorf("server down: code %d reason %q (err %v), want 2 %q", got.Code, got.Reason, got.Err, want)
	}
}
