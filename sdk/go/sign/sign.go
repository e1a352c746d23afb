// Package sign exports wasmkube_sign (docs/abi.md section 1.5): the part of a pod this
// plugin's Filter and Score verdicts depend on. Pods whose fragments are equal for every
// plugin of a profile are scheduled from one Filter/Score pass (batching); a plugin that
// does not export it makes every pod it sees unsignable.
//
// Sign only what your verdicts read from the pod: two pods with equal fragments must get
// the same verdict and raw score on any node (`wasmkube plugin conformance` checks it),
// and placing one of them may change only the verdicts of the node it went to.
package sign

import (
	"strconv"
	"strings"
	"unsafe"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Fragment is one part of a pod's signature: a key and its value for this pod.
type Fragment struct{ Key, Value string }

// Func returns the pod's fragments, or ok false when the plugin cannot sign this pod
// (its verdicts depend on other pods' placement).
type Func func(pod sdk.Pod) (fragments []Fragment, ok bool)

var fn Func

// Register sets the plugin's signing function. Call it from init().
func Register(f Func) { fn = f }

// Label is a Func for a plugin whose verdicts depend on the given pod labels only.
func Label(keys ...string) Func {
	return func(pod sdk.Pod) ([]Fragment, bool) {
		out := make([]Fragment, 0, len(keys))
		for _, k := range keys {
			v := pod.Label(k)
			out = append(out, Fragment{Key: "label/" + k, Value: v})
		}
		return out, true
	}
}

// Requests is a Func for a plugin whose verdicts depend on the pod's effective requests
// only (resource fit, packing, spreading by utilisation).
func Requests(pod sdk.Pod) ([]Fragment, bool) {
	r := pod.Requests()
	var b strings.Builder
	for _, v := range []int64{r.MilliCPU, r.Memory, r.EphemeralStorage, r.NonZeroMilliCPU, r.NonZeroMemory} {
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte(',')
	}
	for _, n := range pod.ScalarNames() {
		b.WriteString(n + "=" + strconv.FormatInt(pod.ScalarRequest(n), 10) + ",")
	}
	return []Fragment{{Key: "requests", Value: b.String()}}, true
}

// codeUnsignable is the status of a pod the plugin cannot sign.
const codeUnsignable = 2

func run() int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("sign: no function registered (call sign.Register in init)")
		return int32(sdk.CodeError)
	}
	var pod sdk.Pod
	frags, ok := fn(pod)
	if !ok {
		return codeUnsignable
	}
	for _, f := range frags {
		abi.SignFragment(unsafe.Pointer(unsafe.StringData(f.Key)), int32(len(f.Key)), unsafe.Pointer(unsafe.StringData(f.Value)), int32(len(f.Value)))
	}
	return 0
}
