package schedwasm

import (
	"context"
	"strconv"

	"github.com/tetratelabs/wazero/api"
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// CodeUnsignable is what wasmkube_sign returns for a pod it cannot sign (docs/abi.md
// section 1.5); it is Unschedulable's number, as upstream's SignPod says so.
const CodeUnsignable = CodeUnschedulable

// Sign is wasmkube_sign: the part of the pod the plugin's verdicts depend on, as
// fragments (sign_fragment), or Unsignable. Optional; a module without it makes every
// pod it sees unsignable, never its profile.
var Sign = &wasmhost.Kind{Name: "sign", Export: "wasmkube_sign", Codes: []int32{CodeUnsignable}}

// Limits of a signature (docs/abi.md section 6).
const (
	maxSignFragments   = 64
	maxSignKey         = 256
	maxSignValue       = 64 << 10
	signFragmentPrefix = "wasm/"
)

// SignFragment is one sign_fragment of a wasmkube_sign call.
type SignFragment struct{ Key, Value string }

// signFuncs are the host functions of wasmkube_sign.
var signFuncs = []wasmhost.HostFunc{
	{Name: "sign_fragment", Params: sig(i32, i32, i32, i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		if c == nil || c.Kind != Sign {
			hc.SetGarbage("sign_fragment called from " + hc.Kind.String() + ", only wasmkube_sign may call it")
			return
		}
		switch {
		case uint32(s[1]) > maxSignKey:
			panic(wasmhost.Garbage("sign_fragment: key of " + strconv.Itoa(int(uint32(s[1]))) + " bytes, the limit is " + strconv.Itoa(maxSignKey)))
		case uint32(s[3]) > maxSignValue:
			panic(wasmhost.Garbage("sign_fragment: value of " + strconv.Itoa(int(uint32(s[3]))) + " bytes, the limit is " + strconv.Itoa(maxSignValue)))
		case len(c.Fragments) >= maxSignFragments:
			panic(wasmhost.Garbage("sign_fragment: more than " + strconv.Itoa(maxSignFragments) + " fragments"))
		}
		key := string(wasmhost.Mem(mod, "sign_fragment", s[0], s[1]))
		val := string(wasmhost.Mem(mod, "sign_fragment", s[2], s[3]))
		c.Fragments = append(c.Fragments, SignFragment{Key: key, Value: val})
	}},
}

// SignPod implements framework.SignPlugin through wasmkube_sign. A module without the
// export, a pod it answers Unsignable for, and a failed call (whatever the plugin's
// failurePolicy: the full pass then runs the plugin under its policy) all make the pod
// unsignable. Fragment keys are put under wasm/<plugin>/ so no plugin can answer for
// another's key.
func (c *core) SignPod(ctx context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	if !c.Kinds().Has(Sign) {
		return nil, framework.Unsignable("wasm plugin " + c.name + " does not export wasmkube_sign")
	}
	call := c.getCall(Sign, nil, pod)
	defer c.putCall(call)
	if err := call.Do(ctx, c.pool); err != nil {
		return nil, framework.Unsignable("wasm plugin " + c.name + ": wasmkube_sign failed: " + err.Error())
	}
	if call.Code != CodeSuccess {
		reason := call.Reason
		if reason == "" {
			reason = "wasm plugin " + c.name + " cannot sign the pod"
		}
		return nil, framework.Unsignable(reason)
	}
	out := make([]framework.SignFragment, len(call.Fragments))
	for i, f := range call.Fragments {
		out[i] = framework.SignFragment{Key: signFragmentPrefix + c.name + "/" + f.Key, Value: f.Value}
	}
	return out, nil
}

// Signature calls wasmkube_sign of pool's module for pod and returns its code and
// fragments (for the conformance kit).
func Signature(ctx context.Context, pool *wasmhost.Pool, pod *v1.Pod) (int32, []SignFragment, error) {
	call := &Call{Kind: Sign, Pod: pod}
	err := call.Do(ctx, pool)
	return call.Code, call.Fragments, err
}
