// Package nodewasm makes wasm modules the kubelet's probe and preStop logic (docs/abi.md
// section 4.7): the Probe and PreStop kinds, the pod-scoped network functions, and a
// probe.Prober and hook.PreStopRunner (Hooks) that run a pod's plugin when its annotations
// or the config's selectors ask for one and the built-in runners otherwise.
//
// The timing rules (initialDelaySeconds, periodSeconds, thresholds, the grace period) stay
// the kubelet's; a plugin only decides one probe or one preStop, within the call's time
// limit, and may reach nothing but its own pod's IP.
package nodewasm

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/tetratelabs/wazero/api"
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/plugins/podfuncs"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// CodeFailure is a Probe's "the probe failed" (docs/abi.md section 1.3).
const CodeFailure int32 = 2

// The kubelet entry points.
var (
	Probe   = &wasmhost.Kind{Name: "probe", Export: "wasmkube_probe", Codes: []int32{CodeFailure}}
	PreStop = &wasmhost.Kind{Name: "prestop", Export: "wasmkube_prestop"}
)

// Kinds are the kubelet entry points.
var Kinds = wasmhost.Kinds{Probe, PreStop}

// NetworkCapability is the grant a module needs to import tcp_connect, http_get and
// http_post. The kubelet's loader grants it to every hook plugin: the functions reach only
// the call's pod IP, whatever the guest asks.
const NetworkCapability = "pod-network"

// Extension is the kubelet's part of the host: its kinds, the pod accessors of section 4.1
// and the functions of section 4.7.
var Extension = wasmhost.Extension{Name: "kubelet", Kinds: Kinds, Funcs: append(append([]wasmhost.HostFunc(nil), podfuncs.Funcs...), hostFuncs...)}

// Probe kinds as the guest reads them with probe_kind.
const (
	ProbeStartup   = "startup"
	ProbeLiveness  = "liveness"
	ProbeReadiness = "readiness"
)

// Call is one probe or preStop call: the container of a running pod, and what the guest's
// HTTP requests last received. A Call is used by one goroutine; reuse it only after Do
// returned.
type Call struct {
	// Kind is Probe or PreStop.
	Kind *wasmhost.Kind
	// Pod is the pod as the kubelet last saw it; Container names one of its containers.
	Pod       *v1.Pod
	Container string
	// ProbeKind is ProbeStartup, ProbeLiveness or ProbeReadiness (empty for PreStop).
	ProbeKind string
	// PodIP is the only address the network functions reach (empty: they answer EACCES).
	PodIP string
	// Timeout is the call's time limit: the probe's timeoutSeconds, or what is left of the
	// grace period (the caller caps it with the plugin's timeout). 0: the module's limit.
	Timeout time.Duration

	// Code is the status code the entry point returned; Reason what it set with
	// status_reason.
	Code   int32
	Reason string

	// last is the last HTTP response of the call (nil before any).
	last *response
	// dial, when set, is where every connection of the call goes whatever the port (smoke
	// calls against a loopback test server only).
	dial string
	// started: the call got an instance (it did not end waiting for one).
	started bool
	hc      wasmhost.Call
}

// response is what response_body and response_header read.
type response struct {
	header http.Header
	body   []byte
}

// Do runs the call on an idle instance of p; see wasmhost.Pool.Do. ctx's cancellation
// ends the call (reported as canceled, not as a plugin failure); its deadline ends it only
// when the call started late (it waited for a free instance): the time limit is Timeout,
// so that a call cut at its limit is the plugin's timeout.
func (c *Call) Do(ctx context.Context, p *wasmhost.Pool) error {
	c.Code, c.Reason, c.last = 0, "", nil
	c.hc = wasmhost.Call{Kind: c.Kind, Data: c, Timeout: c.Timeout}
	cctx, cancel := withoutDeadline(ctx)
	err := p.Do(cctx, &c.hc)
	cancel()
	c.Code, c.Reason, c.started = c.hc.Code, c.hc.Reason, !c.hc.Deadline().IsZero()
	c.hc.Data, c.last = nil, nil
	return err
}

// withoutDeadline returns a context cancelled when ctx is cancelled, and deadlineSlack
// after ctx's deadline rather than at it: a call that runs into its time limit is then cut
// by its own timer and reported as the plugin's timeout, not as its caller giving up, while
// a call that had to wait for a free instance still ends (as canceled) just after the
// caller's deadline, so a preStop never holds termination past the grace period.
func withoutDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(ctx)
	var cctx context.Context
	var cancel context.CancelFunc
	if dl, ok := ctx.Deadline(); ok {
		cctx, cancel = context.WithDeadline(base, dl.Add(deadlineSlack))
	} else {
		cctx, cancel = context.WithCancel(base)
	}
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	return cctx, func() { stop(); cancel() }
}

// deadlineSlack is how long after its caller's deadline a call is cancelled.
const deadlineSlack = 50 * time.Millisecond

// WasmPod implements podfuncs.Source.
func (c *Call) WasmPod() *v1.Pod { return c.Pod }

// node returns the kubelet call data of a host call, or nil outside a kubelet call.
func node(hc *wasmhost.Call) *Call {
	c, _ := hc.Data.(*Call)
	return c
}

var i32 = wasmhost.I32

func sig(ts ...api.ValueType) []api.ValueType { return ts }

// hostFuncs are the functions of docs/abi.md section 4.7.
var hostFuncs = []wasmhost.HostFunc{
	{Name: "container_name", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := node(hc)
		if c == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "container_name", s[0], s[1], c.Container)
	}},
	{Name: "probe_kind", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := node(hc)
		if c == nil || c.Kind != Probe {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "probe_kind", s[0], s[1], c.ProbeKind)
	}},
	{Name: "pod_ip", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := node(hc)
		if c == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "pod_ip", s[0], s[1], c.PodIP)
	}},
	{Name: "tcp_connect", Params: sig(i32), Results: sig(i32), Capability: NetworkCapability, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := node(hc)
		if c == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		ctx, cancel := waitContext(hc)
		defer cancel()
		s[0] = wasmhost.Neg(c.tcpConnect(ctx, int32(s[0])))
	}},
	{Name: "http_get", Params: sig(i32, i32, i32), Results: sig(i32), Capability: NetworkCapability, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := node(hc)
		path := wasmhost.Mem(mod, "http_get", s[1], s[2])
		if c == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		ctx, cancel := waitContext(hc)
		defer cancel()
		s[0] = wasmhost.Neg(c.httpDo(ctx, http.MethodGet, int32(s[0]), string(path), nil))
	}},
	{Name: "http_post", Params: sig(i32, i32, i32, i32, i32), Results: sig(i32), Capability: NetworkCapability, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := node(hc)
		path := wasmhost.Mem(mod, "http_post", s[1], s[2])
		body := wasmhost.Mem(mod, "http_post", s[3], s[4])
		if c == nil || c.Kind != PreStop {
			s[0] = wasmhost.Unavailable
			return
		}
		if len(body) > maxBody {
			s[0] = wasmhost.Neg(-errEINVAL)
			return
		}
		ctx, cancel := waitContext(hc)
		defer cancel()
		s[0] = wasmhost.Neg(c.httpDo(ctx, http.MethodPost, int32(s[0]), string(path), append([]byte(nil), body...)))
	}},
	{Name: "response_body", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := node(hc)
		if c == nil || c.last == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "response_body", s[0], s[1], c.last.body)
	}},
	{Name: "response_header", Params: sig(i32, i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := node(hc)
		name := wasmhost.Mem(mod, "response_header", s[0], s[1])
		if c == nil || c.last == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		vs := c.last.header.Values(string(name))
		if len(vs) == 0 {
			s[0] = wasmhost.NotFound
			return
		}
		s[0] = wasmhost.WriteVar(mod, "response_header", s[2], s[3], vs[0])
	}},
	{Name: "sleep_ms", Params: sig(i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := node(hc)
		if c == nil || c.Kind != PreStop {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.Neg(sleep(hc.Context(), hc.Deadline(), int32(s[0])))
	}},
}

// sleep waits ms milliseconds, or until just before deadline when that comes first (then
// it returns -ETIMEDOUT, and the guest has a moment to return on its own).
func sleep(ctx context.Context, deadline time.Time, ms int32) int32 {
	if ms <= 0 {
		return 0
	}
	d := time.Duration(ms) * time.Millisecond
	cut := false
	if left := time.Until(deadline) - sleepMargin; left < d {
		d, cut = max(left, 0), true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return -errETIMEDOUT
	}
	if cut {
		return -errETIMEDOUT
	}
	return 0
}

// sleepMargin is how long before the call's time limit a cut-short sleep_ms or network
// function returns, so a guest that checks the result can still return its own verdict
// (a probe's reason, "3 requests still in flight") before the limit, instead of being cut
// off as a timeout. 5 ms was too little for a Go guest on a loaded 2-core machine, and
// 20 ms too little at load average 30 (the kit's drain-prestop case timed out).
const sleepMargin = 50 * time.Millisecond

// waitContext is the context network functions wait under: it ends sleepMargin before
// the call's time limit (or when the caller gives up).
func waitContext(hc *wasmhost.Call) (context.Context, context.CancelFunc) {
	return context.WithDeadline(hc.Context(), hc.Deadline().Add(-sleepMargin))
}
