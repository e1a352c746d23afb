// Package nodewasmtest loads a kubelet hook plugin (probe, preStop) as the kubelet does and
// runs single calls of it against an HTTP server the test provides on loopback: the call's
// pod IP is 127.0.0.1, so the plugin reaches the test's server when its args name the
// server's port (Port).
package nodewasmtest

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// PodIP is the pod IP of every call.
const PodIP = "127.0.0.1"

// Plugin is a loaded hook plugin. Pod is the pod of its calls (nodewasm.SmokePod unless the
// test sets another); Container the container they are for ("app").
type Plugin struct {
	Plugin    *nodewasm.Plugin
	Pod       *v1.Pod
	Container string
}

// Result is what one call returned: the entry point's status code and status_reason, and
// the host's error for a failed call (a *wasmhost.CallError: trap, timeout, memory limit,
// garbage result, or the plugin's Error).
type Result struct {
	Code   int32
	Reason string
	Err    error
}

// Load loads the module at path with args (JSON; "" for none) on a fresh host, as the
// kubelet does: network granted, wasmkube_init run with the args, every entry point
// smoke-called. It fails the test if the kubelet would refuse the module.
func Load(t testing.TB, path, args string) *Plugin {
	t.Helper()
	spec := config.HookPlugin{Spec: modulespec.Spec{Name: "test", Path: path}}
	if args != "" {
		spec.Args = json.RawMessage(args)
	}
	p, err := LoadSpec(t, spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// LoadSpec is Load with a whole declaration (timeout cap, memoryLimit, failurePolicy,
// args); it returns the kubelet's load error instead of failing the test.
func LoadSpec(t testing.TB, spec config.HookPlugin) (*Plugin, error) {
	t.Helper()
	if spec.Name == "" {
		spec.Name = "test"
	}
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := nodewasm.Load(context.Background(), h, spec, "")
	if err != nil {
		return nil, err
	}
	t.Cleanup(p.Close)
	return &Plugin{Plugin: p, Pod: nodewasm.SmokePod(), Container: "app"}, nil
}

// Probe runs wasmkube_probe once as a probe of kind (startup, liveness, readiness) with
// the time limit timeout (a probe's timeoutSeconds).
func (p *Plugin) Probe(t testing.TB, kind string, timeout time.Duration) Result {
	t.Helper()
	c := &nodewasm.Call{Kind: nodewasm.Probe, Pod: p.Pod, Container: p.Container, ProbeKind: kind, PodIP: PodIP, Timeout: timeout}
	err := c.Do(context.Background(), p.Plugin.Pool(nodewasm.Probe))
	return Result{Code: c.Code, Reason: c.Reason, Err: err}
}

// PreStop runs wasmkube_prestop once with the time limit grace (what is left of a grace
// period).
func (p *Plugin) PreStop(t testing.TB, grace time.Duration) Result {
	t.Helper()
	c := &nodewasm.Call{Kind: nodewasm.PreStop, Pod: p.Pod, Container: p.Container, PodIP: PodIP, Timeout: grace}
	err := c.Do(context.Background(), p.Plugin.Pool(nodewasm.PreStop))
	return Result{Code: c.Code, Reason: c.Reason, Err: err}
}

// Port is the port of a test server listening on loopback, for the plugin's args.
func Port(t testing.TB, srv *httptest.Server) int {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return n
}
