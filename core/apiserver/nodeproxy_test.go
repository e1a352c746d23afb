package apiserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

// TestKubectlNodeProxy: kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary reaches
// the node's kubelet server (a hollow node's, on loopback) and returns its answer; the
// kubelet's own 404 comes back as it is; the proxy is authorized as nodes/proxy, so a
// user without that right is refused, naming it; an unknown node is NotFound.
func TestKubectlNodeProxy(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	ready := make(chan struct{})
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errc <- hollow.Run(ctx, srv.Config, hollow.Options{Count: 1, Prefix: "px-", Ready: ready, ServeStats: true})
	}()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("hollow node: %v", err)
	}
	k := newKubectl(t, srv)
	out := k.ok("get", "--raw", "/api/v1/nodes/px-0/proxy/stats/summary")
	if !strings.Contains(out, `"nodeName":"px-0"`) {
		t.Fatalf("stats/summary through the node proxy:\n%.2000s", out)
	}
	if out, err := k.run("get", "--raw", "/api/v1/nodes/px-0/proxy/no-such-path"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("a path the kubelet does not serve: %v\n%s", err, out)
	}
	out, err := k.run("get", "--raw", "/api/v1/nodes/px-0/proxy/stats/summary", "--as", "alice")
	if err == nil || !strings.Contains(out, `cannot get resource "nodes/proxy"`) {
		t.Errorf("nodes/proxy without the right: %v\n%s", err, out)
	}
	if out, err := k.run("get", "--raw", "/api/v1/nodes/nope/proxy/stats/summary"); err == nil || !strings.Contains(out, "NotFound") && !strings.Contains(out, "not found") {
		t.Errorf("an unknown node: %v\n%s", err, out)
	}
}
