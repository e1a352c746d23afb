package nodewasm_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

func wat(t testing.TB, name string) string {
	return wasmbuild.WAT(t, "plugins/nodewasm/testdata/"+name)
}

// TestProbeFollowsTheServer: the WAT probe reads /health of the test server through the
// pod IP 127.0.0.1 and its port.
func TestProbeFollowsTheServer(t *testing.T) {
	var body atomic.Value
	body.Store("warming")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body.Load())
	}))
	defer srv.Close()
	p := nodewasmtest.Load(t, wat(t, "get.wat"), fmt.Sprint(nodewasmtest.Port(t, srv)))
	r := p.Probe(t, nodewasm.ProbeReadiness, time.Second)
	if r.Err != nil || r.Code != nodewasm.CodeFailure || r.Reason != "body not ok" {
		t.Fatalf("warming: %+v", r)
	}
	body.Store("ok")
	if r := p.Probe(t, nodewasm.ProbeReadiness, time.Second); r.Err != nil || r.Code != 0 {
		t.Fatalf("ok: %+v", r)
	}
	srv.Close()
	r = p.Probe(t, nodewasm.ProbeReadiness, time.Second)
	if r.Code != nodewasm.CodeFailure || r.Reason != "status 111" {
		t.Fatalf("closed server: %+v, want status 111 (ECONNREFUSED)", r)
	}
}
