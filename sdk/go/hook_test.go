//go:build !wasip1

package sdk_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// closedPort is a loopback port where nothing listens.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// The SDK's kubelet accessors, read through the kubelet's host, return what the host
// holds and what the pod answered.
func TestHookSDKThroughTheHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, strings.Repeat("a", 9997)+"end")
		case "/moved":
			http.Redirect(w, r, "http://10.0.0.1/elsewhere", http.StatusFound)
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "%s %s %s", r.Method, r.Header.Get("Content-Type"), b)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	port := nodewasmtest.Port(t, srv)
	p := nodewasmtest.Load(t, wasmbuild.Go(t, "sdk/go/internal/hookguest"), fmt.Sprintf(`{"port": %d, "closed": %d}`, port, closedPort(t)))

	got := p.Probe(t, "readiness", 2*time.Second)
	want := "container=app kind=readiness ip=127.0.0.1 pod=default/wasmkube-smoke app=wasmkube-smoke" +
		` big=200 type=text/plain missing="" len=10000 tail=end` +
		" moved=302 location=http://10.0.0.1/elsewhere err=<nil>" +
		` stale=""/0` +
		fmt.Sprintf(" post=POST :%d/echo: not available in this kind of call unavailable=true", port) +
		" hostpath=true tcp=<nil> closed=true refused=true sleep=false"
	if got.Code != 2 || got.Reason != want {
		t.Errorf("probe: code %d (err %v), the guest saw\n%s\nwant\n%s", got.Code, got.Err, got.Reason, want)
	}

	start := time.Now()
	got = p.PreStop(t, 300*time.Millisecond)
	took := time.Since(start)
	want = `container=app kind="" ip=127.0.0.1 post=201 body=POST application/octet-stream drain now short=true long=false`
	// The guest returns an Error with its report right after the cut sleep; on a loaded
	// machine it may miss the moment sleep_ms leaves it, and the call is a time-limit
	// failure that still carries the report.
	var ce *wasmhost.CallError
	if !errors.As(got.Err, &ce) || ce.Reason != wasmhost.ReasonError && ce.Reason != wasmhost.ReasonTimeout || got.Reason != want {
		t.Errorf("prestop: code %d (err %v), the guest saw\n%s\nwant\n%s", got.Code, got.Err, got.Reason, want)
	}
	if took > time.Second {
		t.Errorf("prestop with 300ms left of the grace period took %v: sdk.Sleep(time.Hour) slept past it", took)
	}
}
