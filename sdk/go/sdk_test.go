//go:build !wasip1

package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startGuest(t *testing.T, args string) (*wasmhost.Pool, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := h.Load(ctx, wasmhost.LoadOptions{Name: "testguest", Path: wasmbuild.Go(t, "sdk/go/internal/testguest")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(ctx) })
	p, err := m.NewPool(ctx, []byte(args), 2)
	if err != nil {
		t.Fatal(err)
	}
	return p, logs
}

// The SDK's accessors, read through the real host, return what the scheduler holds.
func TestSDKThroughTheHost(t *testing.T) {
	p, logs := startGuest(t, `{"greeting":"hello"}`)
	if got := p.Module().Interrupt(); got != wasmhost.InterruptDeadline {
		t.Errorf("Go guest runs with interrupt %s, want %s", got, wasmhost.InterruptDeadline)
	}
	if got := p.Module().Kinds(); len(got) != 6 {
		t.Fatalf("kinds %v, want all six scheduler kinds", got)
	}
	ctx := context.Background()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", ResourceVersion: "7",
			Labels: map[string]string{"app": "store"}, Annotations: map[string]string{"big": strings.Repeat("x", 5000)}},
		Spec: v1.PodSpec{Containers: []v1.Container{
			{Name: "a", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi"),
				v1.ResourceEphemeralStorage: resource.MustParse("1Gi"), "example.com/gpu": resource.MustParse("2")}}},
			{Name: "b"},
		}},
	}
	node := framework.NewNodeInfo(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("1"), "example.com/gpu": resource.MustParse("1")}}}}}})
	node.SetNode(&v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "n1", ResourceVersion: "3", Labels: map[string]string{"zone": "z1"}},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "gpu", Value: "true", Effect: v1.TaintEffectNoSchedule}, {Key: "spot", Effect: v1.TaintEffectPreferNoSchedule}}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("16Gi"),
			v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("100Gi"), "example.com/gpu": resource.MustParse("4")}},
	})
	state := framework.NewCycleState()
	if err := (&schedwasm.Call{Kind: schedwasm.PreFilter, Pod: pod, State: state}).Do(ctx, p); err != nil {
		t.Fatal(err)
	}
	c := &schedwasm.Call{Kind: schedwasm.Filter, Pod: pod, State: state, Nodes: []*framework.NodeInfo{node}}
	if err := c.Do(ctx, p); err != nil {
		t.Fatal(err)
	}
	if len(c.Verdicts) != 1 {
		t.Fatalf("verdicts %+v", c.Verdicts)
	}
	want := "pod=shop/web app=store big=5000 missing=false req=250/67108864/1073741824 nz=350/276824064 example.com/gpu=2 podjson=true" +
		" | node=0:n1 zone=z1 ok=true alloc={MilliCPU:8000 Memory:17179869184 EphemeralStorage:107374182400 Pods:110}" +
		" req={MilliCPU:1000 Memory:0 EphemeralStorage:0 Pods:1} nz=1000/209715200" +
		" gpu=4/1 taints=[{gpu true NoSchedule} {spot  PreferNoSchedule}] nodejson=true" +
		` | args=hello state="prefilter saw web"`
	if got := c.Verdicts[0].Reason; got != want {
		t.Errorf("the guest saw\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(logs.String(), `msg="stdout says hello from n1" plugin=testguest`) {
		t.Errorf("guest stdout line missing from host log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `msg="filtered n1" plugin=testguest`) {
		t.Errorf("guest log line missing from host log:\n%s", logs.String())
	}
}

func TestSDKExtensionPoints(t *testing.T) {
	p, _ := startGuest(t, "")
	ctx := context.Background()
	nodes := func() []*framework.NodeInfo {
		var out []*framework.NodeInfo
		for i, cpu := range []string{"2", "4", "8"} {
			ni := framework.NewNodeInfo()
			ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n" + string(rune('0'+i))}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}})
			out = append(out, ni)
		}
		return out
	}()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"only-n1": ""}}}

	pre := &schedwasm.Call{Kind: schedwasm.PreFilter, Pod: pod, State: framework.NewCycleState()}
	if err := pre.Do(ctx, p); err != nil || len(pre.PreFilterNodes) != 1 || pre.PreFilterNodes[0] != "n1" {
		t.Errorf("prefilter: nodes %v, err %v; want [n1]", pre.PreFilterNodes, err)
	}

	sc := &schedwasm.Call{Kind: schedwasm.Score, Pod: pod, Nodes: nodes, Scores: make([]int64, 3)}
	if err := sc.Do(ctx, p); err != nil || sc.Scores[0] != 2 || sc.Scores[1] != 4 || sc.Scores[2] != 8 {
		t.Errorf("score: %v, err %v; want [2 4 8]", sc.Scores, err)
	}
	norm := &schedwasm.Call{Kind: schedwasm.NormalizeScore, Pod: pod, NodeNames: []string{"n0", "n1", "n2"}, Scores: []int64{2, 4, 8}}
	if err := norm.Do(ctx, p); err != nil || norm.Scores[0] != 0 || norm.Scores[1] != 33 || norm.Scores[2] != 100 {
		t.Errorf("normalize: %v, err %v; want [0 33 100]", norm.Scores, err)
	}

	state := framework.NewCycleState()
	ps := &schedwasm.Call{Kind: schedwasm.PreScore, Pod: pod, Nodes: nodes, State: state}
	if err := ps.Do(ctx, p); err != nil || ps.Code != schedwasm.CodeSuccess {
		t.Errorf("prescore: code %d err %v", ps.Code, err)
	}
	skip := &schedwasm.Call{Kind: schedwasm.PreScore, Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"skip": ""}}}, Nodes: nodes, State: state}
	if err := skip.Do(ctx, p); err != nil || skip.Code != schedwasm.CodeSkip {
		t.Errorf("prescore skip: code %d err %v, want 5", skip.Code, err)
	}

	post := &schedwasm.Call{Kind: schedwasm.PostFilter, Pod: pod, NodeNames: []string{"a", "b"}, FilterCodes: []int32{3, 2}}
	if err := post.Do(ctx, p); err != nil || post.Code != 0 || post.Nominated != "b" {
		t.Errorf("postfilter: code %d nominated %q err %v, want b", post.Code, post.Nominated, err)
	}
	none := &schedwasm.Call{Kind: schedwasm.PostFilter, Pod: pod, NodeNames: []string{"a"}, FilterCodes: []int32{3}}
	if err := none.Do(ctx, p); err != nil || none.Code != 2 || none.Reason != "nothing to preempt" {
		t.Errorf("postfilter without candidates: code %d reason %q err %v", none.Code, none.Reason, err)
	}
}

// The guest sees no files, no environment and no real clock.
func TestSandbox(t *testing.T) {
	p, _ := startGuest(t, "")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"sandbox": ""}}}
	c := &schedwasm.Call{Kind: schedwasm.Filter, Pod: pod, Nodes: []*framework.NodeInfo{framework.NewNodeInfo()}}
	start := time.Now()
	if err := c.Do(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(c.Verdicts) != 1 {
		t.Fatalf("verdicts %+v", c.Verdicts)
	}
	got := c.Verdicts[0].Reason
	for _, want := range []string{"file=false", "dir=false", "env=0", "args=0"} {
		if !strings.Contains(got, want) {
			t.Errorf("sandbox report %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, fmt.Sprintf("year=%d", start.Year())) {
		t.Errorf("sandbox report %q: the guest sees the real date", got)
	}
}

// A Go guest that allocates without bound hits its memory limit; the Go runtime aborts, the
// host reports the memory limit and a fresh instance serves the next call.
func TestGoGuestMemoryLimit(t *testing.T) {
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := h.Load(ctx, wasmhost.LoadOptions{Name: "hog", Path: wasmbuild.Go(t, "sdk/go/internal/testguest"), MemoryLimit: 32 << 20, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	p, err := m.NewPool(ctx, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	hog := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"hog": ""}}}
	err = (&schedwasm.Call{Kind: schedwasm.Filter, Pod: hog, Nodes: []*framework.NodeInfo{framework.NewNodeInfo()}}).Do(ctx, p)
	var ce *wasmhost.CallError
	if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonMemory {
		t.Fatalf("got %v, want a memory limit failure", err)
	}
	c := &schedwasm.Call{Kind: schedwasm.Filter, Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Labels: map[string]string{"sandbox": ""}}}, Nodes: []*framework.NodeInfo{framework.NewNodeInfo()}}
	if err := c.Do(ctx, p); err != nil {
		t.Fatalf("next call: %v", err)
	}
	if created, discarded := p.Stats(); created != 2 || discarded != 1 {
		t.Errorf("instances created/discarded %d/%d, want 2/1", created, discarded)
	}
}
