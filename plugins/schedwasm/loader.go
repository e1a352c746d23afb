// Package schedwasm makes wasm modules scheduler plugins: a module becomes a
// framework.Plugin implementing exactly the extension points it exports (PreFilter,
// Filter with FilterBatch, PostFilter, PreScore, Score with ScoreBatch, NormalizeScore
// through ScoreExtensions), with the plugin's failurePolicy applied to every failure.
//
// Wiring: the scheduler takes Loader.Load as its Options.WasmLoader.
package schedwasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// DefaultPoolSize is the pool size when neither the spec nor the framework handle gives
// a parallelism.
const DefaultPoolSize = config.DefaultParallelism

// Loader loads wasm scheduler plugins on a Host.
type Loader struct {
	host *wasmhost.Host

	mu     sync.Mutex
	shared map[string]*SharedCounters // by plugin name, kept across config swaps
}

// NewLoader returns a Loader running plugins on h.
func NewLoader(h *wasmhost.Host) *Loader { return &Loader{host: h} }

// Load reads, compiles and checks the module of spec (Path relative to baseDir), and
// returns the factory that builds the plugin with its args. The factory makes an instance
// pool sized to spec.Pool or the handle's parallelism, runs the guest's init with the
// args, and smoke-calls every exported entry point with a synthetic pod and node; any
// failure there fails the factory, so a broken module never replaces a working one.
func (l *Loader) Load(ctx context.Context, spec config.WasmPlugin, baseDir string) (framework.PluginFactory, error) {
	lerr := func(err error) error { return &wasmhost.LoadError{Plugin: spec.Name, Path: spec.Path, Err: err} }
	if err := spec.Validate(modulespec.RowOf("scheduler"), nil); err != nil {
		return nil, lerr(err)
	}
	policy := FailurePolicy(spec.Policy())
	file, err := spec.Resolve(baseDir)
	if err != nil {
		return nil, lerr(err)
	}
	lo := wasmhost.LoadOptions{
		Name: spec.Name, Path: spec.Path, Wasm: file.Wasm,
		Timeout: spec.Timeout.Duration, MemoryLimit: spec.MemoryBytes(),
	}
	mod, err := l.host.Load(ctx, lo)
	if err != nil {
		return nil, err
	}
	digest := moduleDigest(file.Wasm)
	// The factory holds no module: each plugin it builds loads one from the host's cache of
	// compiled modules (nothing is compiled again) and closes it with itself, so no module
	// outlives its plugins waiting for the garbage collector (docs/plugins.md, "Lifetimes").
	defer mod.Close(ctx)
	if len(mod.Kinds().Intersect(Kinds)) == 0 {
		return nil, lerr(errNoSchedulerKind)
	}
	if mod.Kinds().Has(NormalizeScore) && !mod.Kinds().Has(Score) {
		return nil, lerr(errors.New("exports wasmkube_normalizescore without wasmkube_score"))
	}
	return func(ctx context.Context, args json.RawMessage, h framework.Handle) (framework.Plugin, error) {
		mod, err := l.host.Load(ctx, lo)
		if err != nil {
			return nil, err
		}
		defer mod.Close(ctx) // the plugin holds its own share
		size := spec.Pool
		if size <= 0 && h != nil {
			size = h.Parallelism()
		}
		if size <= 0 {
			size = DefaultPoolSize
		}
		p, err := New(ctx, mod, args, size, policy)
		if err != nil {
			return nil, err
		}
		pl := p.(*plugin)
		pl.shared = l.counters(spec.Name)
		pl.digest = digest
		if w, ok := h.(framework.WaitingPodHandle); ok {
			pl.waitingPods = w
		}
		return p, nil
	}, nil
}

// New builds the plugin of a loaded module: a pool of size instances with args, smoke-
// called once per exported entry point. The plugin takes its own share of mod (closed
// with the plugin); the caller keeps mod.
func New(ctx context.Context, mod *wasmhost.Module, args json.RawMessage, size int, policy FailurePolicy) (framework.Plugin, error) {
	if len(args) == 0 || string(args) == "null" {
		args = nil
	}
	loaded := wasmhost.NewLoaded(mod.Share())
	pool, err := loaded.NewPool(ctx, args, size)
	if err != nil {
		loaded.Close()
		return nil, err
	}
	c := &core{name: mod.Name(), pool: pool, loaded: loaded, policy: policy, shared: &SharedCounters{}}
	if err := Smoke(ctx, pool); err != nil {
		loaded.Close()
		return nil, &wasmhost.LoadError{Plugin: mod.Name(), Path: mod.Path(), Err: err}
	}
	// The scheduler closes a retired plugin after its last cycle (its profile set is the
	// kind's Set); this is the safety net for a caller that drops one without closing it
	// (a test, plugin check).
	goruntime.AddCleanup(c, (*wasmhost.Loaded).Close, loaded)
	return compose(c), nil
}

// SmokePod and SmokeNode are the synthetic objects of smoke calls.
func SmokePod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wasmkube-smoke", Namespace: "default", UID: "wasmkube-smoke"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
		}}}},
	}
}

// SmokeNode is a 4-cpu, 8Gi node with no pods.
func SmokeNode() *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "wasmkube-smoke-node", UID: "wasmkube-smoke-node", Labels: map[string]string{"kubernetes.io/hostname": "wasmkube-smoke-node"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110"),
		}},
	})
	return ni
}

// Smoke calls every scheduler entry point the pool's module exports once with SmokePod
// and SmokeNode, as one scheduling cycle would: in cycle order, with one cycle state (so
// a Filter or Score that reads what its PreFilter or PreScore wrote sees it), and without
// the Filter or Score that a PreFilter or PreScore Skip leaves out of a cycle. A trap,
// timeout, memory or pointer fault, or garbage result is an error; a plugin that returns
// a verdict (even Error, with a reason) passes.
func Smoke(ctx context.Context, pool *wasmhost.Pool) error {
	pod, node := SmokePod(), SmokeNode()
	state := framework.NewCycleState()
	skipped := map[*wasmhost.Kind]bool{}
	shared := &SharedCounters{}
	for _, k := range pool.Module().Kinds().Intersect(Kinds) {
		if skipped[k] {
			continue
		}
		call := &Call{Kind: k, Pod: pod, State: state}
		switch k {
		case Filter, PreScore:
			call.Nodes = []*framework.NodeInfo{node}
		case Score:
			call.Nodes, call.Scores = []*framework.NodeInfo{node}, make([]int64, 1)
		case NormalizeScore:
			call.NodeNames, call.Scores = []string{node.Node().Name}, []int64{50}
		case PostFilter:
			call.NodeNames, call.FilterCodes = []string{node.Node().Name}, []int32{CodeUnschedulable}
		case Reserve, Unreserve, Permit, PreBind, PostBind:
			// Counters of their own: a smoke Reserve must not count against the plugin's.
			call.Binding = &BindingData{NodeName: node.Node().Name, Node: node.Node(), Shared: shared}
		case Events:
			call.Binding = &BindingData{}
		case QueueingHint:
			call.Binding = &BindingData{Event: framework.ClusterEvent{Resource: framework.ResourceNode, Action: framework.Add}, NewObj: node.Node()}
		}
		if err := call.Do(ctx, pool); err != nil {
			if ce, ok := err.(*wasmhost.CallError); ok && ce.Reason == wasmhost.ReasonError {
				continue
			}
			return fmt.Errorf("smoke call of %s: %w", k.Export, err)
		}
		if k == Permit && call.Code == CodeWait && call.Binding.WaitMs == 0 {
			return fmt.Errorf("smoke call of %s: returned Wait (4) without calling permit_wait: a wait needs a timeout", k.Export)
		}
		if call.Code == CodeSkip {
			switch k {
			case PreFilter:
				skipped[Filter] = true
			case PreScore:
				skipped[Score], skipped[NormalizeScore] = true, true
			}
		}
	}
	return nil
}

// counters returns the shared counters of the plugin named name.
func (l *Loader) counters(name string) *SharedCounters {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shared == nil {
		l.shared = map[string]*SharedCounters{}
	}
	c, ok := l.shared[name]
	if !ok {
		c = &SharedCounters{}
		l.shared[name] = c
	}
	return c
}
