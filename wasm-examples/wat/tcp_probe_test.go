// Package watexamples_test runs WAT example plugins through the real host.
package watexamples_test

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// tcp-probe passes while something listens on its port of the pod's IP and fails with the
// errno's meaning once nothing does.
func TestTCPProbeThroughTheHost(t *testing.T) {
	path := wasmbuild.WAT(t, "wasm-examples/wat/tcp-probe/tcp-probe.wat")
	for _, bad := range []string{``, `{"port": 0}`, `{"port": 65536}`, `{"port": 99999999999999}`, `{"host": "x"}`} {
		_, err := nodewasmtest.LoadSpec(t, config.HookPlugin{Spec: modulespec.Spec{Path: path}, Args: json.RawMessage(bad)})
		if err == nil || !strings.Contains(err.Error(), "args.port: a port 1..65535 is required") {
			t.Errorf("args %q: %v, want the init's rejection", bad, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	p := nodewasmtest.Load(t, path, fmt.Sprintf(`{"port": %d}`, port))
	for _, kind := range []string{"startup", "liveness", "readiness"} {
		if got := p.Probe(t, kind, time.Second); got.Code != 0 || got.Err != nil {
			t.Errorf("%s, port open: code %d reason %q err %v, want success", kind, got.Code, got.Reason, got.Err)
		}
	}
	ln.Close()
	if got := p.Probe(t, "liveness", time.Second); got.Code != 2 || got.Reason != "connection refused" {
		t.Errorf("port closed: code %d reason %q err %v, want 2 %q", got.Code, got.Reason, got.Err, "connection refused")
	}
}
