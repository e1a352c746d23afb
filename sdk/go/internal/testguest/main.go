// Command testguest is a plugin that exercises every part of the Go SDK; the SDK's
// integration test (sdk/go/sdk_test.go) runs it through the real host and checks what it
// saw. Filter reports what it read as its rejection reason.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/filter"
	"github.com/wasmkube/wasmkube/sdk/go/normalize"
	"github.com/wasmkube/wasmkube/sdk/go/postfilter"
	"github.com/wasmkube/wasmkube/sdk/go/prefilter"
	"github.com/wasmkube/wasmkube/sdk/go/prescore"
	"github.com/wasmkube/wasmkube/sdk/go/score"
)

var args struct {
	Greeting string `json:"greeting"`
}

func init() {
	sdk.OnInit(func() error { return sdk.DecodeArgs(&args) })
	prefilter.Register(func(pod sdk.Pod) sdk.Status {
		if _, ok := pod.LookupLabel("only-n1"); ok {
			prefilter.RestrictTo("n1")
		}
		sdk.State.Set("seen", []byte("prefilter saw "+pod.Name()))
		return sdk.OK()
	})
	filter.Register(report)
	prescore.Register(func(pod sdk.Pod, nodes []sdk.Node) sdk.Status {
		if _, ok := pod.LookupLabel("skip"); ok {
			return sdk.Skip()
		}
		sdk.State.Set("nodes", []byte(fmt.Sprint(len(nodes))))
		return sdk.OK()
	})
	score.Register(func(pod sdk.Pod, node sdk.Node) (int64, sdk.Status) {
		r, _ := node.Resources()
		return r.Allocatable.MilliCPU / 1000, sdk.OK()
	})
	normalize.Register(normalize.MinMax)
	postfilter.Register(func(pod sdk.Pod, rejected []postfilter.Rejected) (string, sdk.Status) {
		for _, r := range rejected {
			if r.Code == sdk.CodeUnschedulable {
				return r.Node.Name(), sdk.OK()
			}
		}
		return "", sdk.Reject("nothing to preempt")
	})
}

// hog keeps what the "hog" pod makes the guest allocate reachable.
var hog [][]byte

func report(pod sdk.Pod, node sdk.Node) sdk.Status {
	if _, ok := pod.LookupLabel("sandbox"); ok {
		return sandbox()
	}
	if _, ok := pod.LookupLabel("hog"); ok {
		hog = nil
		for {
			hog = append(hog, make([]byte, 1<<20))
		}
	}
	var b strings.Builder
	req := pod.Requests()
	ann, _ := pod.Annotation("big")
	_, hasMissing := pod.LookupLabel("missing")
	fmt.Fprintf(&b, "pod=%s/%s app=%s big=%d missing=%v req=%d/%d/%d nz=%d/%d",
		pod.Namespace(), pod.Name(), pod.Label("app"), len(ann), hasMissing, req.MilliCPU, req.Memory, req.EphemeralStorage, req.NonZeroMilliCPU, req.NonZeroMemory)
	for _, s := range pod.ScalarNames() {
		fmt.Fprintf(&b, " %s=%d", s, pod.ScalarRequest(s))
	}
	fmt.Fprintf(&b, " podjson=%v", bytes.Contains(pod.JSON(), []byte(`"kind":"Pod"`)))
	r, ok := node.Resources()
	fmt.Fprintf(&b, " | node=%d:%s zone=%s ok=%v alloc=%+v req=%+v nz=%d/%d", node.Index(), node.Name(), node.Label("zone"), ok,
		r.Allocatable, r.Requested, r.NonZeroRequested.MilliCPU, r.NonZeroRequested.Memory)
	fmt.Fprintf(&b, " gpu=%d/%d taints=%v nodejson=%v", node.Scalar("example.com/gpu", false), node.Scalar("example.com/gpu", true),
		node.Taints(), bytes.Contains(node.JSON(), []byte(`"kind":"Node"`)))
	seen, _ := sdk.State.Get("seen")
	fmt.Fprintf(&b, " | args=%s state=%q", args.Greeting, seen)
	sdk.Log(sdk.LevelInfo, "filtered "+node.Name())
	fmt.Println("stdout says hello from", node.Name())
	return sdk.Reject(b.String())
}

func main() {}

// sandbox reports what the guest can see of the system: no files, no environment, no real
// clock.
func sandbox() sdk.Status {
	_, ferr := os.ReadFile("/etc/hostname")
	_, derr := os.ReadDir("/")
	t1 := time.Now()
	time.Sleep(50 * time.Millisecond)
	t2 := time.Now()
	return sdk.Reject(fmt.Sprintf("file=%v dir=%v env=%d args=%d year=%d slept=%v",
		ferr == nil, derr == nil, len(os.Environ()), len(os.Args), t1.Year(), t2.Sub(t1) >= 50*time.Millisecond))
}
