// Package podfuncs is the pod section of ABI v1 (docs/abi.md section 4.1): the host
// functions that read the pod of a call, shared by every kind whose call has a pod (the
// pod being scheduled, admitted, probed or stopped). An adapter lists Funcs in its
// wasmhost.Extension and makes its call data a Source.
package podfuncs

import (
	"github.com/tetratelabs/wazero/api"
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// Source is call data that has a pod. WasmPod returns nil when this call has none (an
// admission request for another resource): the functions then answer -2 (UNAVAILABLE).
type Source interface {
	WasmPod() *v1.Pod
}

func pod(c *wasmhost.Call) *v1.Pod {
	if s, ok := c.Data.(Source); ok {
		return s.WasmPod()
	}
	return nil
}

var (
	buf  = []api.ValueType{wasmhost.I32, wasmhost.I32}
	kbuf = []api.ValueType{wasmhost.I32, wasmhost.I32, wasmhost.I32, wasmhost.I32}
	ret  = []api.ValueType{wasmhost.I32}
)

// Funcs are pod_json, pod_name, pod_namespace, pod_label and pod_annotation.
var Funcs = []wasmhost.HostFunc{
	{Name: "pod_json", Params: buf, Results: ret, Fn: func(c *wasmhost.Call, mod api.Module, s []uint64) {
		p := pod(c)
		if p == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "pod_json", s[0], s[1], c.Objects().Pod(p))
	}},
	{Name: "pod_name", Params: buf, Results: ret, Fn: func(c *wasmhost.Call, mod api.Module, s []uint64) {
		p := pod(c)
		if p == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "pod_name", s[0], s[1], p.Name)
	}},
	{Name: "pod_namespace", Params: buf, Results: ret, Fn: func(c *wasmhost.Call, mod api.Module, s []uint64) {
		p := pod(c)
		if p == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "pod_namespace", s[0], s[1], p.Namespace)
	}},
	{Name: "pod_label", Params: kbuf, Results: ret, Fn: func(c *wasmhost.Call, mod api.Module, s []uint64) {
		p := pod(c)
		if p == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.Lookup(mod, "pod_label", p.Labels, s[0], s[1], s[2], s[3])
	}},
	{Name: "pod_annotation", Params: kbuf, Results: ret, Fn: func(c *wasmhost.Call, mod api.Module, s []uint64) {
		p := pod(c)
		if p == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.Lookup(mod, "pod_annotation", p.Annotations, s[0], s[1], s[2], s[3])
	}},
}
