package scheduler

import (
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/queue"
)

// moveOnEvent moves the unschedulable pods that ev may help out of the pool: those that
// also pass only (nil: all), and whose profile's queueing hints say Queue for the plugins
// that rejected them (runtime.Framework.QueueingHint).
func (s *Scheduler) moveOnEvent(ev framework.ClusterEvent, oldObj, newObj any, only func(*queue.QueuedPodInfo) bool) {
	ps := s.acquireProfiles()
	defer ps.release()
	ctx := s.runContext()
	s.queue.MoveAllToActiveOrBackoff(func(qp *queue.QueuedPodInfo) bool {
		if only != nil && !only(qp) {
			return false
		}
		name := qp.Pod.Spec.SchedulerName
		if name == "" {
			name = "default-scheduler"
		}
		fwk, ok := ps.frameworks[name]
		if !ok {
			return true
		}
		r := fwk.QueueingHint(ctx, qp.Pod, qp.UnschedulablePlugins, ev, oldObj, newObj)
		if r.Err != nil {
			s.log.Warn("queueing hint failed; the pod is queued", "pod", qp.Key(), "plugin", r.Plugin, "err", r.Err)
		}
		return r.Queue
	})
}
