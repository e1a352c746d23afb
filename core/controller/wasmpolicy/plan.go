package wasmpolicy

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// Condition types and reasons of a WasmPolicy's status.
const (
	ConditionReady    = "Ready"
	ConditionDegraded = "Degraded"

	ReasonActive       = "Active"       // Ready: every targeted component has the generation active
	ReasonProgressing  = "Progressing"  // Ready False: some have not reported it yet
	ReasonFailed       = "Failed"       // Ready False or Degraded True: some failed to load it
	ReasonNoComponents = "NoComponents" // Ready False: no live component runs the hook
	ReasonNoFailures   = "NoFailures"   // Degraded False
	ReasonNoReport     = "NoReport"     // a component's entry before its first report
	// Ready False and Degraded True: the image's tag could not be resolved to a digest.
	ReasonResolveFailed = "ResolveFailed"
)

// DefaultResolveRetry is how long after a failed resolution the registry is asked again.
const DefaultResolveRetry = 30 * time.Second

// manifestDigest is what status.digest may hold.
var manifestDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// HollowLabel marks a simulated node (kubelet/hollow): it runs no hooks, so it is no
// kubelet policy's target.
const HollowLabel = "wasmkube.io/hollow"

// Target is one live component instance a policy is meant for.
type Target struct {
	Component, Name string
}

// Targets are the live components that should load p, sorted: for a kubelet hook the
// Ready Nodes its nodeSelector matches (not hollow ones that load no policies); for an admission hook the API servers, for a
// scheduler hook the schedulers running its profile, each by an identity Lease held at
// now (report.Heartbeat). next is when the earliest of those Leases runs out (zero: none),
// when the set must be computed again.
func Targets(p *policyv1alpha1.WasmPolicy, nodes []*corev1.Node, leases []*coordinationv1.Lease, now time.Time) (ts []Target, next time.Time) {
	comp := p.Spec.Hook.ComponentOf()
	switch comp {
	case policyv1alpha1.ComponentKubelet:
		sel := labels.Everything()
		if k := p.Spec.Kubelet; k != nil && k.NodeSelector != nil {
			s, err := metav1.LabelSelectorAsSelector(k.NodeSelector)
			if err != nil {
				return nil, time.Time{}
			}
			sel = s
		}
		for _, n := range nodes {
			// A hollow node loads no policy unless it says it does (hollow-nodes --load-policies).
			idle := n.Labels[HollowLabel] == "true" && n.Annotations[report.LoadsPoliciesAnnotation] != "true"
			if nodeReady(n) && !idle && sel.Matches(labels.Set(n.Labels)) {
				ts = append(ts, Target{Component: comp, Name: n.Name})
			}
		}
	case policyv1alpha1.ComponentAPIServer, policyv1alpha1.ComponentScheduler:
		profile := policyv1alpha1.DefaultSchedulerName
		if s := p.Spec.Scheduler; s != nil && s.SchedulerName != "" {
			profile = s.SchedulerName
		}
		for _, l := range leases {
			if l.Labels[report.ComponentLabel] != comp {
				continue
			}
			live, until := report.Live(l, now)
			if !live {
				continue
			}
			if comp == policyv1alpha1.ComponentScheduler && !slices.Contains(strings.Split(l.Annotations[report.SchedulerNamesAnnotation], ","), profile) {
				continue
			}
			ts = append(ts, Target{Component: comp, Name: *l.Spec.HolderIdentity})
			if next.IsZero() || until.Before(next) {
				next = until
			}
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return slices.Compact(ts), next
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Rollup is what the status of a policy should be.
type Rollup struct {
	Status policyv1alpha1.WasmPolicyStatus
	// Failures are the targeted components that failed to load the current generation.
	Failures []policyv1alpha1.ComponentStatus
}

// Plan rolls the reports on p (by target) up into p's status: one entry per target (a
// component without a report on p is Pending), Ready with n/m, Degraded when any failed
// the current generation, observedGeneration. A report from a component that is not a
// target (it went away, or no longer matches) is left out of both the list and the
// count. Under rollout AllOrNothing, the generation is released (releasedGeneration) once
// every target reports it Staged or Active and none failed; a release is never taken back.
// The digest of an image is the controller's resolution (PlanResolution), kept; of a file
// (or a tag under pullPolicy Never) it becomes the one every component running the
// current generation reports (kept while none does, or while they differ). The revision
// is kept.
func Plan(p *policyv1alpha1.WasmPolicy, targets []Target, reports map[Target]policyv1alpha1.ComponentStatus, now time.Time) Rollup {
	gen := p.Generation
	st := policyv1alpha1.WasmPolicyStatus{
		ObservedGeneration: gen, Digest: p.Status.Digest, Revision: p.Status.Revision,
		ResolvedGeneration: p.Status.ResolvedGeneration, ResolvedImage: p.Status.ResolvedImage,
		ReleasedGeneration: p.Status.ReleasedGeneration,
		TargetedComponents: int32(len(targets)),
		Conditions:         slices.Clone(p.Status.Conditions),
	}
	var out Rollup
	digests := map[string]bool{}
	staged := 0
	for _, t := range targets {
		r, ok := reports[t]
		if !ok {
			r = policyv1alpha1.ComponentStatus{Name: t.Name, Component: t.Component, Phase: policyv1alpha1.PhasePending,
				Reason: ReasonNoReport, Message: "the component has not reported on the policy yet"}
		}
		st.Components = append(st.Components, r)
		if r.ObservedGeneration != gen {
			continue
		}
		switch r.Phase {
		case policyv1alpha1.PhaseActive:
			st.ReadyComponents++
			staged++
			if manifestDigest.MatchString(r.Digest) {
				digests[r.Digest] = true
			}
		case policyv1alpha1.PhaseStaged:
			staged++
		case policyv1alpha1.PhaseFailed:
			out.Failures = append(out.Failures, r)
		}
	}
	allOrNothing := p.Spec.Rollout == policyv1alpha1.RolloutAllOrNothing
	if allOrNothing && len(targets) > 0 && staged == len(targets) && len(out.Failures) == 0 {
		// Every target holds the generation loaded (or, joining after a release, runs
		// it): release it, and each component puts it in force when it sees this.
		st.ReleasedGeneration = gen
	}
	if len(digests) == 1 && !centrallyResolved(p) {
		// Every component that runs the generation runs this module.
		for d := range digests {
			st.Digest = d
		}
	}
	ready := metav1.Condition{Type: ConditionReady, ObservedGeneration: gen,
		Message: fmt.Sprintf("%d/%d components have generation %d active", st.ReadyComponents, st.TargetedComponents, gen)}
	if allOrNothing && st.ReleasedGeneration != gen {
		ready.Message += fmt.Sprintf("; %d/%d have it staged (rollout AllOrNothing: it goes in force everywhere once every one has)", staged, st.TargetedComponents)
	}
	switch {
	case len(targets) == 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonNoComponents
		ready.Message = fmt.Sprintf("0/0: no live %s runs hook %s", p.Spec.Hook.ComponentOf(), p.Spec.Hook)
	case st.ReadyComponents == st.TargetedComponents:
		ready.Status, ready.Reason = metav1.ConditionTrue, ReasonActive
	case len(out.Failures) > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonFailed
	default:
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonProgressing
	}
	degraded := metav1.Condition{Type: ConditionDegraded, ObservedGeneration: gen, Status: metav1.ConditionFalse,
		Reason: ReasonNoFailures, Message: "no component failed to load the current generation"}
	if n := len(out.Failures); n > 0 {
		f := out.Failures[0]
		degraded.Status, degraded.Reason = metav1.ConditionTrue, ReasonFailed
		degraded.Message = fmt.Sprintf("%d/%d components failed generation %d (the last good revision stays in force there); %s %s: %s: %s",
			n, st.TargetedComponents, gen, f.Component, f.Name, f.Reason, f.Message)
		if allOrNothing && st.ReleasedGeneration != gen {
			degraded.Message = fmt.Sprintf("%d/%d components failed generation %d, so no component switches to it (rollout AllOrNothing; the last good revision stays in force everywhere); %s %s: %s: %s",
				n, st.TargetedComponents, gen, f.Component, f.Name, f.Reason, f.Message)
		}
	}
	setCondition(&st.Conditions, ready, now)
	setCondition(&st.Conditions, degraded, now)
	out.Status = st
	return out
}

// setCondition is meta.SetStatusCondition at a given time (it keeps the transition time
// when the status does not change).
func setCondition(cs *[]metav1.Condition, c metav1.Condition, now time.Time) {
	c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	meta.SetStatusCondition(cs, c)
}

// OrphanGrace is how long a report may outlive its component: a component's first report
// may come before its identity Lease, and one that dies keeps its report this long after its
// Lease ran out.
const OrphanGrace = 5 * time.Minute

// ReportRef is a WasmPolicyReport by name, with the component instance that wrote it.
type ReportRef struct {
	Name    string
	Target  Target
	Created time.Time
}

// Orphans are the reports whose component is gone: a kubelet whose Node no longer exists; an
// API server or scheduler with no identity Lease (stopped cleanly, or its Lease collected)
// or one that ran out more than OrphanGrace ago; reports younger than OrphanGrace are kept
// (a component reports before its Lease is written). Their rows would otherwise pile up,
// one per policy for every restart of a scheduler or API server, since each start is a new
// instance. next is when a report kept now becomes an orphan (zero: none).
func Orphans(reports []ReportRef, nodes []*corev1.Node, leases []*coordinationv1.Lease, now time.Time) (orphans []string, next time.Time) {
	nodeNames := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		nodeNames[n.Name] = true
	}
	until := map[Target]time.Time{}
	for _, l := range leases {
		comp := l.Labels[report.ComponentLabel]
		if comp == "" || l.Spec.HolderIdentity == nil {
			continue
		}
		t := Target{Component: comp, Name: *l.Spec.HolderIdentity}
		if _, u := report.Live(l, now); u.After(until[t]) {
			until[t] = u
		}
	}
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, r := range reports {
		gone := now.Add(-OrphanGrace) // the instance must have been gone since before this
		switch r.Target.Component {
		case policyv1alpha1.ComponentKubelet:
			if nodeNames[r.Target.Name] {
				continue
			}
		case policyv1alpha1.ComponentAPIServer, policyv1alpha1.ComponentScheduler:
			if u, ok := until[r.Target]; ok {
				if u.After(gone) {
					later(u.Add(OrphanGrace))
					continue
				}
			}
		default:
			continue
		}
		if r.Created.After(gone) {
			later(r.Created.Add(OrphanGrace))
			continue
		}
		orphans = append(orphans, r.Name)
	}
	sort.Strings(orphans)
	return orphans, next
}
