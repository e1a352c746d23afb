package scheduler

import (
	"sort"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// WaitingPods names (namespace/name) the pods held at Permit by the profiles in force, in
// name order: pods reserved on a node, waiting for a Permit plugin (a gang's other members)
// to allow them or for their timeout.
func (s *Scheduler) WaitingPods() []string {
	ps := s.acquireProfiles()
	defer ps.release()
	var out []string
	for _, f := range ps.frameworks {
		f.IterateOverWaitingPods(func(wp framework.WaitingPod) {
			out = append(out, wp.GetPod().Namespace+"/"+wp.GetPod().Name)
		})
	}
	sort.Strings(out)
	return out
}
