// Package gangscheduling is the built-in gang policy: the pods of a PodGroup
// (scheduling.k8s.io/v1beta1) whose policy is gang, named by the pods'
// spec.schedulingGroup.podGroupName, are bound all together or not at all, as upstream's
// GangScheduling plugin:
//
//   - PreFilter holds a member while its PodGroup does not exist or fewer than minCount
//     members have been created (upstream's PreEnqueue): UnschedulableAndUnresolvable,
//     and the pod comes back when a member or the PodGroup is added.
//   - Permit holds each member, reserved on its node, until minCount members are reserved
//     or bound; the member that completes the group allows the waiting ones by UID.
//   - A member's wait ends after the timeout (args permitTimeoutSeconds, default 300, as
//     upstream's fixed 5 minutes); its Unreserve then rejects every other waiting member
//     of the group, so the whole group releases its nodes at once and requeues.
//
// Two groups never hold each other's room for ever: the queue orders gang members by
// group (queue.activeLess), so one group's members are Permitted one after another
// before the next group's; and any wait ends at its timeout with the whole group
// released (docs/scheduler.md, "Gang scheduling").
package gangscheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1beta1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "GangScheduling"

// DefaultPermitTimeout is how long a member waits at Permit for its group, as upstream.
const DefaultPermitTimeout = 5 * time.Minute

// Args are the plugin's args.
type Args struct {
	// PermitTimeoutSeconds is the wait at Permit (1 .. 900; 0: the default).
	PermitTimeoutSeconds int `json:"permitTimeoutSeconds,omitempty"`
}

// GroupLister finds PodGroups and the pods of a namespace (client-go listers in the
// scheduler; anything that answers the same in tests).
type GroupLister interface {
	PodGroup(namespace, name string) (*schedulingv1beta1.PodGroup, error)
	// GroupPods returns the pods of namespace that name group (others may be included).
	GroupPods(namespace, group string) ([]*v1.Pod, error)
}

// Plugin is the gang policy.
type Plugin struct {
	timeout time.Duration
	groups  GroupLister
	waiting framework.WaitingPodHandle
	client  kubernetes.Interface
}

var (
	_ framework.PreFilterPlugin = (*Plugin)(nil)
	_ framework.ReservePlugin   = (*Plugin)(nil)
	_ framework.PermitPlugin    = (*Plugin)(nil)
)

// New builds the plugin from the scheduler's informers (PodGroups and pods). Without
// informers (a simulation) it lets every pod through.
func New(_ context.Context, raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var a Args
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("args: %w", err)
		}
	}
	if a.PermitTimeoutSeconds < 0 || a.PermitTimeoutSeconds > int(framework.MaxPermitTimeout/time.Second) {
		return nil, fmt.Errorf("args.permitTimeoutSeconds: %d is outside 1..900", a.PermitTimeoutSeconds)
	}
	p := &Plugin{timeout: DefaultPermitTimeout}
	if a.PermitTimeoutSeconds > 0 {
		p.timeout = time.Duration(a.PermitTimeoutSeconds) * time.Second
	}
	if ih, ok := h.(framework.InformerHandle); ok && ih.SharedInformerFactory() != nil {
		f := ih.SharedInformerFactory()
		pods := f.Core().V1().Pods()
		g := informerGroups{pg: f.Scheduling().V1beta1().PodGroups().Lister(), pods: pods.Lister()}
		// An index by group, so a member's cycle reads its group's pods, not its
		// namespace's. It can be added only before the informer starts: a profile built
		// by a config reload finds it there, or lists the namespace.
		inf := pods.Informer()
		if _, ok := inf.GetIndexer().GetIndexers()[groupIndex]; ok || inf.AddIndexers(cache.Indexers{groupIndex: groupIndexFunc}) == nil {
			g.index = inf.GetIndexer()
		}
		p.groups = g
	}
	if w, ok := h.(framework.WaitingPodHandle); ok {
		p.waiting = w
	}
	if h != nil {
		p.client = h.ClientSet()
	}
	return p, nil
}

// NewWith builds the plugin on the given lister and waiting pods (tests, tools).
func NewWith(groups GroupLister, waiting framework.WaitingPodHandle, timeout time.Duration) *Plugin {
	return &Plugin{timeout: timeout, groups: groups, waiting: waiting}
}

// Name implements framework.Plugin.
func (p *Plugin) Name() string { return Name }

// GroupOf is the PodGroup name of a pod ("" when it names none).
func GroupOf(pod *v1.Pod) string {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

// gang returns the pod's PodGroup when its policy is gang (nil: not a gang member), or a
// rejection when it names a PodGroup that does not exist.
func (p *Plugin) gang(pod *v1.Pod) (*schedulingv1beta1.PodGroup, *framework.Status) {
	name := GroupOf(pod)
	if name == "" || p.groups == nil {
		return nil, nil
	}
	pg, err := p.groups.PodGroup(pod.Namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("pod group %q not found", name))
	}
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("pod group %s/%s: %w", pod.Namespace, name, err))
	}
	if pg.Spec.SchedulingPolicy.Gang == nil {
		return nil, nil
	}
	return pg, nil
}

// PreFilter holds a member until its group exists and has minCount members created.
func (p *Plugin) PreFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	pg, st := p.gang(pod)
	if st != nil || pg == nil {
		return nil, st
	}
	pods, err := p.groups.GroupPods(pod.Namespace, GroupOf(pod))
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	n := Members(pods, pg.Name)
	if min := int(pg.Spec.SchedulingPolicy.Gang.MinCount); n < min {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("pod group %q has %d of its minCount %d pods", pg.Name, n, min))
	}
	return nil, nil
}

// Members counts the pods of group among pods: not deleted, not finished.
func Members(pods []*v1.Pod, group string) int {
	n := 0
	for _, q := range pods {
		if GroupOf(q) == group && q.DeletionTimestamp == nil && q.Status.Phase != v1.PodSucceeded && q.Status.Phase != v1.PodFailed {
			n++
		}
	}
	return n
}

// Reserve has nothing to do: the pod's room is held by the scheduler's assumption.
func (p *Plugin) Reserve(context.Context, *framework.CycleState, *v1.Pod, string) *framework.Status {
	return nil
}

// Unreserve releases the whole group when one member does not end bound (its wait timed
// out, it was rejected, or a later step failed): every other member waiting at Permit is
// rejected, so the group's nodes are free at once and the group requeues together.
func (p *Plugin) Unreserve(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ string) {
	group := GroupOf(pod)
	if group == "" || p.waiting == nil {
		return
	}
	p.waiting.IterateOverWaitingPods(func(wp framework.WaitingPod) {
		q := wp.GetPod()
		if q.UID != pod.UID && q.Namespace == pod.Namespace && GroupOf(q) == group {
			wp.Reject(Name, fmt.Sprintf("pod group %q released: member %s was not bound", group, pod.Name))
		}
	})
	if pg, _ := p.gang(pod); pg != nil {
		p.setScheduled(pg, metav1.ConditionFalse, schedulingv1beta1.PodGroupReasonUnschedulable,
			fmt.Sprintf("fewer than %d pods of the group could be placed together", pg.Spec.SchedulingPolicy.Gang.MinCount))
	}
}

// Permit holds a member until minCount members of its group are reserved or bound; the
// member that completes the group allows the others.
func (p *Plugin) Permit(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ string) (*framework.Status, time.Duration) {
	pg, st := p.gang(pod)
	if st != nil || pg == nil {
		return st, 0
	}
	var waiting []framework.WaitingPod
	if p.waiting != nil {
		p.waiting.IterateOverWaitingPods(func(wp framework.WaitingPod) {
			q := wp.GetPod()
			if q.Namespace == pod.Namespace && GroupOf(q) == pg.Name && q.UID != pod.UID {
				waiting = append(waiting, wp)
			}
		})
	}
	bound := 0
	if pods, err := p.groups.GroupPods(pod.Namespace, GroupOf(pod)); err == nil {
		for _, q := range pods {
			if q.Spec.NodeName != "" && GroupOf(q) == pg.Name && q.UID != pod.UID && q.DeletionTimestamp == nil {
				bound++
			}
		}
	}
	if 1+len(waiting)+bound < int(pg.Spec.SchedulingPolicy.Gang.MinCount) {
		return framework.NewStatus(framework.Wait), p.timeout
	}
	for _, wp := range waiting {
		wp.Allow(Name)
	}
	p.setScheduled(pg, metav1.ConditionTrue, "Scheduled", fmt.Sprintf("%d pods of the group were placed together", 1+len(waiting)+bound))
	return nil, 0
}

// Recheck allows the members of pg waiting at Permit when they (with the members already
// bound) reach its minCount: a lowered minCount completes a group without waiting for
// another member to reach Permit. The scheduler calls it when a PodGroup changes.
func (p *Plugin) Recheck(pg *schedulingv1beta1.PodGroup) {
	if p.waiting == nil || pg.Spec.SchedulingPolicy.Gang == nil {
		return
	}
	var waiting []framework.WaitingPod
	p.waiting.IterateOverWaitingPods(func(wp framework.WaitingPod) {
		if q := wp.GetPod(); q.Namespace == pg.Namespace && GroupOf(q) == pg.Name {
			waiting = append(waiting, wp)
		}
	})
	if len(waiting) == 0 {
		return
	}
	bound := 0
	if p.groups != nil {
		if pods, err := p.groups.GroupPods(pg.Namespace, pg.Name); err == nil {
			for _, q := range pods {
				if q.Spec.NodeName != "" && GroupOf(q) == pg.Name && q.DeletionTimestamp == nil {
					bound++
				}
			}
		}
	}
	if len(waiting)+bound < int(pg.Spec.SchedulingPolicy.Gang.MinCount) {
		return
	}
	for _, wp := range waiting {
		wp.Allow(Name)
	}
	p.setScheduled(pg, metav1.ConditionTrue, "Scheduled", fmt.Sprintf("%d pods of the group were placed together", len(waiting)+bound))
}

// setScheduled records on the PodGroup's status whether the group was placed
// (PodGroupInitiallyScheduled), off the scheduling loop; once True it is not changed.
func (p *Plugin) setScheduled(pg *schedulingv1beta1.PodGroup, status metav1.ConditionStatus, reason, msg string) {
	if p.client == nil {
		return
	}
	for _, c := range pg.Status.Conditions {
		if c.Type == schedulingv1beta1.PodGroupInitiallyScheduled && (c.Status == metav1.ConditionTrue || (c.Status == status && c.Reason == reason)) {
			return
		}
	}
	cond := metav1.Condition{Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.Now(), ObservedGeneration: pg.Generation}
	ns, name := pg.Namespace, pg.Name
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Failures are dropped: the condition is a report, the next change of the group
		// writes it again.
		pgs := p.client.SchedulingV1beta1().PodGroups(ns)
		cur, err := pgs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		conds := cur.Status.Conditions[:0:0]
		for _, c := range cur.Status.Conditions {
			if c.Type != cond.Type {
				conds = append(conds, c)
			} else if c.Status == metav1.ConditionTrue {
				return
			}
		}
		cur.Status.Conditions = append(conds, cond)
		_, _ = pgs.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	}()
}

// groupIndex indexes pods by namespace/PodGroup.
const groupIndex = "wasmkube.io/pod-group"

func groupIndexFunc(obj any) ([]string, error) {
	if p, ok := obj.(*v1.Pod); ok {
		if g := GroupOf(p); g != "" {
			return []string{p.Namespace + "/" + g}, nil
		}
	}
	return nil, nil
}

// informerGroups answers from the scheduler's informers.
type informerGroups struct {
	pg    schedulinglisters.PodGroupLister
	pods  corelisters.PodLister
	index cache.Indexer // nil: list the namespace
}

func (g informerGroups) PodGroup(ns, name string) (*schedulingv1beta1.PodGroup, error) {
	return g.pg.PodGroups(ns).Get(name)
}

func (g informerGroups) GroupPods(ns, group string) ([]*v1.Pod, error) {
	if g.index == nil {
		return g.pods.Pods(ns).List(labels.Everything())
	}
	objs, err := g.index.ByIndex(groupIndex, ns+"/"+group)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			out = append(out, p)
		}
	}
	return out, nil
}
