package wasmtest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// ConformanceOptions tune the checks.
type ConformanceOptions struct {
	// Args are the plugin's args (a plugin that needs some cannot be checked without).
	Args []byte
	// Calls is the number of calls of the leak check (default 10,000).
	Calls int
	// BigBatch is the node count of the large-batch check (default 5000).
	BigBatch int
	// MaxPermitWait is the longest Permit wait accepted (default DefaultMaxPermitWait).
	MaxPermitWait time.Duration
}

// Check is one conformance check: what docs/plugin-kit.md says it demands, and its test.
type check struct {
	name string
	run  func(ctx context.Context, p *Plugin, o ConformanceOptions) (diff []string, skip string)
}

// Conformance runs every check of the ABI contract (docs/plugin-kit.md) on the module's
// scheduler entry points and returns one result per check.
func (p *Plugin) Conformance(ctx context.Context, o ConformanceOptions) []Result {
	if o.Calls <= 0 {
		o.Calls = 10000
	}
	if o.BigBatch <= 0 {
		o.BigBatch = 5000
	}
	var out []Result
	sched := len(p.mod.Kinds().Intersect(schedwasm.Kinds)) > 0
	for _, c := range checks {
		start := time.Now()
		var diff []string
		skip := ""
		if sched || c.name == checks[0].name {
			diff, skip = c.run(ctx, p, o)
		} else {
			skip = "the module exports no scheduler entry point"
		}
		r := Result{Name: c.name, Passed: len(diff) == 0 && skip == "", Diff: diff, Duration: time.Since(start)}
		if skip != "" {
			r.Skipped, r.Diff = true, []string{skip}
		}
		out = append(out, r)
	}
	if sched {
		out = append(out, p.bindingChecks(ctx, o)...)
	}
	if len(p.mod.Kinds().Intersect(admitwasm.Kinds)) > 0 {
		out = append(out, p.kindChecks(ctx, admissionSubject(p), o)...)
		out = append(out, p.admissionChecks(ctx, o)...)
	}
	if len(p.mod.Kinds().Intersect(nodewasm.Kinds)) > 0 {
		s, err := hookSubject(p)
		if err != nil {
			out = append(out, Result{Name: "kubelet hook checks", Diff: []string{err.Error()}})
		} else {
			out = append(out, p.kindChecks(ctx, s, o)...)
			s.close()
		}
	}
	return out
}

var checks = []check{
	{"init refuses bad args with a reason", checkInit},
	{"answers every fixture pod without a failure", checkFixtures},
	{"same answers on every instance", checkInstances},
	{"answers do not depend on batch splits or node order", checkBatches},
	{"no state carried from one pod's cycle to the next", checkNoGlobals},
	{"long, unicode and unrelated data do not change answers (buffer rule)", checkPadding},
	{"empty and missing fields are not a failure", checkEmpty},
	{"a 5000-node batch fits the time limit", checkBigBatch},
	{"memory stays bounded across 2 x 10,000 cycles", checkLeak},
	{"pods with equal signatures get equal answers (wasmkube_sign)", checkSignature},
}

func (p *Plugin) pool(ctx context.Context, args []byte, size int) (*wasmhost.Pool, []string) {
	pool, err := p.mod.NewPool(ctx, args, size)
	if err != nil {
		return nil, []string{"the plugin did not load with the given args: " + err.Error()}
	}
	return pool, nil
}

func failure(what string, err error) []string {
	var ce *wasmhost.CallError
	if errors.As(err, &ce) {
		return []string{fmt.Sprintf("%s: %s failed: %s: %v", what, ce.Kind, ce.Reason, ce.Err)}
	}
	return []string{what + ": " + err.Error()}
}

func checkInit(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	if !p.mod.HasInit() {
		return nil, "the module exports no wasmkube_init: its args are never checked at load (a bad config fails every call instead)"
	}
	good, err := p.mod.NewPool(ctx, o.Args, 1)
	if err != nil {
		return []string{"the plugin refuses its own args: " + err.Error()}, ""
	}
	good.Close()
	if !good.InitReadArgs() {
		return nil, "wasmkube_init does not read the args: the plugin takes none"
	}
	var diff []string
	for _, bad := range []string{`42`, `"not an object"`, `[1, 2]`} {
		pool, err := p.mod.NewPool(ctx, []byte(bad), 1)
		switch {
		case err == nil:
			pool.Close()
			diff = append(diff, fmt.Sprintf("args %s: wasmkube_init accepted them; it should refuse args it cannot use, with a reason", bad))
		case strings.Contains(err.Error(), "no reason given"):
			diff = append(diff, fmt.Sprintf("args %s: refused without a reason (set one with status_reason)", bad))
		}
	}
	return diff, ""
}

// fixtureNodes are nodes of every shape a plugin meets: zones, ssd labels, taints, full
// and empty nodes, pods already bound, an extended resource.
func fixtureNodes(n int) []*framework.NodeInfo {
	var nodes []v1.Node
	var pods []v1.Pod
	for i := range n {
		name := fmt.Sprintf("node-%04d", i)
		cpu := []string{"2", "4", "8", "16"}[i%4]
		mem := []string{"4Gi", "8Gi", "16Gi", "64Gi"}[(i/4)%4]
		node := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1", Labels: map[string]string{
			"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": fmt.Sprintf("zone-%c", 'a'+i%3)}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem),
				v1.ResourcePods: resource.MustParse("110")}}}
		if i%5 == 0 {
			node.Labels["disk"] = "ssd"
		}
		if i%7 == 3 {
			node.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}}
		}
		if i%11 == 4 {
			node.Labels["wasmkube.io/drain"] = ""
			node.Status.Allocatable["example.com/gpu"] = resource.MustParse("2")
		}
		nodes = append(nodes, node)
		for j := range i % 4 {
			pods = append(pods, v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-p%d", name, j), Namespace: "default"},
				Spec: v1.PodSpec{NodeName: name, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("1Gi")}}}}}})
		}
	}
	return NodeInfos(nodes, pods)
}

// fixturePods are pods of every shape: no requests, small, large, an extended resource,
// labels and annotations a plugin may read.
func fixturePods() []*v1.Pod {
	pod := func(name, cpu, mem string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels: map[string]string{"app": name}}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
		if cpu != "" {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		}
		return p
	}
	gpu := pod("gpu", "1", "2Gi")
	gpu.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
	zoned := pod("zoned", "250m", "256Mi")
	zoned.Annotations = map[string]string{"wasmkube.io/zone": "zone-b"}
	zoned.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	tolerant := pod("tolerant", "100m", "128Mi")
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	withInit := pod("with-init", "100m", "64Mi")
	withInit.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}}
	return []*v1.Pod{pod("besteffort", "", ""), pod("small", "100m", "128Mi"), pod("large", "6", "12Gi"), gpu, zoned, tolerant, withInit}
}

func checkFixtures(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer pool.Close()
	nodes := fixtureNodes(40)
	for _, pod := range fixturePods() {
		if _, err := Cycle(ctx, pool, pod, nodes, CycleOptions{}); err != nil {
			diff = append(diff, failure("pod "+pod.Name, err)...)
		}
	}
	return diff, ""
}

func checkInstances(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	one, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer one.Close()
	var rotate []*wasmhost.Pool
	for range 3 {
		pool, diff := p.pool(ctx, o.Args, 1)
		if diff != nil {
			return diff, ""
		}
		defer pool.Close()
		rotate = append(rotate, pool)
	}
	nodes := fixtureNodes(40)
	for _, pod := range fixturePods() {
		base, err := Cycle(ctx, one, pod, nodes, CycleOptions{BatchSize: 10})
		if err != nil {
			return failure("pod "+pod.Name, err), ""
		}
		got, err := Cycle(ctx, nil, pod, nodes, CycleOptions{BatchSize: 10, Rotate: rotate})
		if err != nil {
			return failure("pod "+pod.Name+", each call on another instance", err), ""
		}
		if d := differ(base, got); d != "" {
			diff = append(diff, fmt.Sprintf("pod %s: with each call of the cycle on another instance, the answer changed: %s (what PreFilter or PreScore learns must go to cycle state, not globals)", pod.Name, d))
		}
	}
	return diff, ""
}

func checkBatches(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer pool.Close()
	nodes := fixtureNodes(40)
	reversed := slices.Clone(nodes)
	slices.Reverse(reversed)
	for _, pod := range fixturePods() {
		base, err := Cycle(ctx, pool, pod, nodes, CycleOptions{})
		if err != nil {
			return failure("pod "+pod.Name, err), ""
		}
		for _, v := range []struct {
			what  string
			nodes []*framework.NodeInfo
			size  int
		}{{"one node per call", nodes, 1}, {"7 nodes per call", nodes, 7}, {"nodes in reverse order", reversed, 0}, {"reverse order, 3 per call", reversed, 3}} {
			got, err := Cycle(ctx, pool, pod, v.nodes, CycleOptions{BatchSize: v.size})
			if err != nil {
				return failure("pod "+pod.Name+", "+v.what, err), ""
			}
			if d := differ(base, got); d != "" {
				diff = append(diff, fmt.Sprintf("pod %s: %s changed the answer: %s; %s", pod.Name, v.what, d, batchCause(base, got)))
			}
		}
	}
	return diff, ""
}

func checkNoGlobals(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	nodes := fixtureNodes(40)
	pods := fixturePods()
	fresh := map[string]*Outcome{}
	for _, pod := range pods {
		pool, diff := p.pool(ctx, o.Args, 1)
		if diff != nil {
			return diff, ""
		}
		out, err := Cycle(ctx, pool, pod, nodes, CycleOptions{})
		pool.Close()
		if err != nil {
			return failure("pod "+pod.Name, err), ""
		}
		fresh[pod.Name] = out
	}
	// One instance serves every pod, twice over, in two orders.
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer pool.Close()
	seq := append(slices.Clone(pods), pods...)
	slices.Reverse(seq[len(pods):])
	for i, pod := range seq {
		out, err := Cycle(ctx, pool, pod, nodes, CycleOptions{})
		if err != nil {
			return failure("pod "+pod.Name, err), ""
		}
		if d := differ(fresh[pod.Name], out); d != "" {
			prev := "no pod"
			if i > 0 {
				prev = "pod " + seq[i-1].Name
			}
			return []string{fmt.Sprintf("pod %s answered differently after %s on the same instance than on a fresh one: %s (keep per-pod data in cycle state, not in globals)", pod.Name, prev, d)}, ""
		}
	}
	return nil, ""
}

func checkPadding(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer pool.Close()
	nodes := fixtureNodes(40)
	padded := make([]*framework.NodeInfo, len(nodes))
	big := strings.Repeat("x", 100<<10)
	for i, ni := range nodes {
		n := ni.Node().DeepCopy()
		n.ResourceVersion = "2"
		pad(&n.ObjectMeta, big)
		cp := framework.NewNodeInfo()
		for _, pi := range ni.Pods {
			cp.AddPod(pi.Pod)
		}
		cp.SetNode(n)
		padded[i] = cp
	}
	pods := fixturePods()
	bases := make([]*Outcome, len(pods))
	for i, pod := range pods {
		base, err := Cycle(ctx, pool, pod, nodes, CycleOptions{})
		if err != nil {
			return failure("pod "+pod.Name, err), ""
		}
		bases[i] = base
	}
	// The padded cycles run on an instance that never saw the unpadded objects: a guest
	// that ignores n > cap then reads whatever its buffer held before (nothing, or
	// another pod), not a copy of the same pod left by the unpadded cycle.
	padPool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer padPool.Close()
	for i, pod := range pods {
		pp := pod.DeepCopy()
		pp.ResourceVersion = "2"
		pad(&pp.ObjectMeta, big)
		got, err := Cycle(ctx, padPool, pp, padded, CycleOptions{})
		if err != nil {
			return failure("pod "+pod.Name+" with a 100 KiB annotation", err), ""
		}
		if d := differ(bases[i], got); d != "" {
			diff = append(diff, fmt.Sprintf("pod %s: a 100 KiB annotation and a unicode label the plugin has no reason to read changed the answer: %s (a read whose length n > cap must be retried with a larger buffer)", pod.Name, d))
		}
	}
	return diff, ""
}

func pad(m *metav1.ObjectMeta, big string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations["conformance.wasmkube.io/padding"] = big
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels["conformance.wasmkube.io/unicode"] = "zoné-日本-ü"
}

func checkEmpty(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer pool.Close()
	empty := &v1.Pod{}
	bare := NodeInfos([]v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}, {ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("n", 253)}}}, nil)
	for _, c := range []struct {
		what string
		pod  *v1.Pod
	}{{"an empty pod (no name, containers, labels)", empty}, {"a pod with a 253-character name", &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("p", 253)}}}} {
		if _, err := Cycle(ctx, pool, c.pod, bare, CycleOptions{}); err != nil {
			diff = append(diff, failure(c.what+" on nodes without labels or resources", err)...)
		}
	}
	return diff, ""
}

func checkBigBatch(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer pool.Close()
	nodes := fixtureNodes(o.BigBatch)
	pod := fixturePods()[1]
	if _, err := Cycle(ctx, pool, pod, nodes, CycleOptions{}); err != nil {
		return failure(fmt.Sprintf("one cycle over %d nodes in one batch (time limit %s per call)", len(nodes), p.mod.Timeout()), err), ""
	}
	return nil, ""
}

// checkLeak runs many cycles on one instance and watches its linear memory. A language
// runtime with a collector grows its heap in steps and then stays; a plugin that keeps
// something from every call grows in every stretch of calls. So the check runs the cycles
// twice (a Go guest's heap settles within the first run: 4 MiB to 6 MiB over 10,000 cycles
// for zone-filter, then flat) and fails when memory grew in each quarter of the second run,
// by more than 1 MiB in all.
func checkLeak(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer pool.Close()
	nodes := fixtureNodes(3)
	pods := fixturePods()
	quarter := max(o.Calls/4, 1)
	var marks []memMark
	for i := range 2 * o.Calls {
		if _, err := Cycle(ctx, pool, pods[i%len(pods)], nodes, CycleOptions{}); err != nil {
			return leakFinding("cycle", marks, o.Calls, i+1, failure(fmt.Sprintf("cycle %d of %d", i+1, 2*o.Calls), err)), ""
		}
		if i == 0 || (i+1)%quarter == 0 {
			marks = append(marks, memMark{i + 1, sum(pool.IdleMemory())})
		}
	}
	if _, discarded := pool.Stats(); discarded > 0 {
		return []string{fmt.Sprintf("%d instance(s) were discarded during %d cycles", discarded, 2*o.Calls)}, ""
	}
	return leakFinding("cycle", marks, o.Calls, 0, nil), ""
}

func sum(s []uint64) uint64 {
	var t uint64
	for _, v := range s {
		t += v
	}
	return t
}

// batchCause names the likely cause of an answer that changed with the batch split: the
// scores alone (a Score that normalises over the nodes of its call, or reads a node's index),
// or the verdicts (a Filter that judges a node by the others of its batch).
func batchCause(a, b *Outcome) string {
	if reflect.DeepEqual(a.Verdicts, b.Verdicts) && !reflect.DeepEqual(a.Scores, b.Scores) {
		return "scores depend on the batch: normalise in NormalizeScore, not in Score (a Score call sees one chunk of the nodes, in any order; only NormalizeScore sees every feasible node), and never score by a node's index in its batch"
	}
	return "verdicts depend on the batch: a Filter judges each node by itself, not by its index, the batch's size or the other nodes in it (the scheduler splits the nodes between its workers in chunks of any size)"
}

// differ describes the first difference between two outcomes, or "".
func differ(a, b *Outcome) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	if (a.Unschedulable == nil) != (b.Unschedulable == nil) {
		return fmt.Sprintf("PreFilter rejection %v vs %v", deref(a.Unschedulable), deref(b.Unschedulable))
	}
	for _, n := range sortedKeys(a.Verdicts) {
		if va, vb := a.Verdicts[n], b.Verdicts[n]; va != vb {
			return fmt.Sprintf("node %s %s vs %s", n, describe(va), describe(vb))
		}
	}
	for _, n := range sortedKeys(a.Scores) {
		if a.Scores[n] != b.Scores[n] {
			return fmt.Sprintf("node %s scored %d vs %d", n, a.Scores[n], b.Scores[n])
		}
	}
	if a.Nominated != b.Nominated {
		return fmt.Sprintf("nominated %q vs %q", a.Nominated, b.Nominated)
	}
	return fmt.Sprintf("%+v vs %+v", a, b)
}

func describe(v Verdict) string {
	if v.Passed {
		return "passed"
	}
	return fmt.Sprintf("rejected (%q)", v.Reason)
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}
