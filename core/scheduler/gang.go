package scheduler

import (
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/gangscheduling"
	"github.com/wasmkube/wasmkube/core/scheduler/queue"
)

// groupKey is the queue's order key of a gang member (queue.Options.GroupKey): its
// PodGroup as namespace/name, and the PodGroup's creation time (the pod's own while the
// PodGroup is not yet known).
func (s *Scheduler) groupKey(p *v1.Pod) (string, time.Time) {
	name := gangscheduling.GroupOf(p)
	if name == "" {
		return "", time.Time{}
	}
	if s.factory != nil {
		if pg, err := s.factory.Scheduling().V1beta1().PodGroups().Lister().PodGroups(p.Namespace).Get(name); err == nil {
			return p.Namespace + "/" + name, pg.CreationTimestamp.Time
		}
	}
	return p.Namespace + "/" + name, p.CreationTimestamp.Time
}

// sameGroup selects the queued pods of namespace/group.
func sameGroup(namespace, group string) func(*queue.QueuedPodInfo) bool {
	return func(qp *queue.QueuedPodInfo) bool {
		return qp.Pod.Namespace == namespace && gangscheduling.GroupOf(qp.Pod) == group
	}
}

// memberAdded moves the unschedulable members of a new pending pod's group: a gang is held
// until minCount members exist (GangScheduling's PreFilter), and this one may complete it.
func (s *Scheduler) memberAdded(p *v1.Pod) {
	if g := gangscheduling.GroupOf(p); g != "" {
		s.moveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, Action: framework.Add}, nil, p, sameGroup(p.Namespace, g))
	}
}

// addGroupHandlers moves a group's waiting members when its PodGroup is added or changed
// (a gang waits for its PodGroup; minCount may be lowered). It returns the handler's
// synced check.
func (s *Scheduler) addGroupHandlers() cache.InformerSynced {
	inf := s.factory.Scheduling().V1beta1().PodGroups().Informer()
	move := func(obj any) {
		pg, ok := obj.(*schedulingv1beta1.PodGroup)
		if !ok {
			return
		}
		s.moveOnEvent(framework.ClusterEvent{Resource: "PodGroup", Action: framework.Add}, nil, pg, sameGroup(pg.Namespace, pg.Name))
		// A lowered minCount may complete the members already waiting at Permit.
		ps := s.acquireProfiles()
		defer ps.release()
		for _, f := range ps.frameworks {
			if g, ok := f.Plugin(gangscheduling.Name).(groupRechecker); ok {
				g.Recheck(pg)
			}
		}
	}
	reg, _ := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    move,
		UpdateFunc: func(_, n any) { move(n) },
	})
	return reg.HasSynced
}

// activateGroup sends the other queued members of a pod that waits at Permit straight to
// activeQ: the group completes only if they reach Permit before its wait times out, which
// a back-off of up to 10 s would not allow.
func (s *Scheduler) activateGroup(p *v1.Pod) {
	if g := gangscheduling.GroupOf(p); g != "" {
		s.queue.Activate(sameGroup(p.Namespace, g))
	}
}

// groupRechecker is the GangScheduling plugin as the registry builds it (wrapped with
// its signature).
type groupRechecker interface {
	Recheck(*schedulingv1beta1.PodGroup)
}
