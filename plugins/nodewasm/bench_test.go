package nodewasm_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// BenchmarkProbeCall is one wasm probe call with its HTTP GET to a loopback server, for the
// WAT probe (get.wat) and the Go example json-health-probe; BenchmarkHTTPGet is the same
// GET from Go, the round trip the call cannot avoid.
//
//	go test -run '^$' -bench 'ProbeCall|HTTPGet' ./plugins/nodewasm/
func BenchmarkProbeCall(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"status": "ok"}`) }))
	defer srv.Close()
	port := nodewasmtest.Port(b, srv)
	for _, m := range []struct{ name, path, args string }{
		{"wat", wasmbuild.WAT(b, "plugins/nodewasm/testdata/get.wat"), fmt.Sprint(port)},
		{"go-json-health", wasmbuild.Go(b, "wasm-examples/go/json-health-probe"), fmt.Sprintf(`{"port": %d, "path": "/health", "field": "status", "value": "ok"}`, port)},
	} {
		b.Run(m.name, func(b *testing.B) {
			p := nodewasmtest.Load(b, m.path, m.args)
			for range 20 { // warm the instance (a Go guest's first calls grow its heap)
				p.Probe(b, nodewasm.ProbeReadiness, time.Second)
			}
			b.ResetTimer()
			for range b.N {
				if r := p.Probe(b, nodewasm.ProbeReadiness, time.Second); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

func BenchmarkHTTPGet(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"status": "ok"}`) }))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for range b.N {
		resp, err := hc.Get(srv.URL + "/health")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}
