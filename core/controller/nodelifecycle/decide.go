package nodelifecycle

import (
	"math"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// managed are the taints this controller owns: it adds and removes them from the node's
// Ready condition and never touches any other taint.
var managed = []corev1.Taint{
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
}

func isManaged(t corev1.Taint) bool {
	for _, m := range managed {
		if m.Key == t.Key && m.Effect == t.Effect {
			return true
		}
	}
	return false
}

// ReadyCondition returns the node's Ready condition, or nil.
func ReadyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// WantedTaintKey is the managed taint key a node with this Ready condition should carry:
// unreachable for Unknown (or no condition), not-ready for False, none for True.
func WantedTaintKey(ready *corev1.NodeCondition) string {
	switch {
	case ready == nil || ready.Status == corev1.ConditionUnknown:
		return corev1.TaintNodeUnreachable
	case ready.Status == corev1.ConditionFalse:
		return corev1.TaintNodeNotReady
	}
	return ""
}

// ReconcileTaints returns the node's taints with the managed ones made to match key (NoExecute
// and NoSchedule; none if key is empty). Unmanaged taints and the timeAdded of managed taints
// that stay are kept. changed reports whether anything differs.
func ReconcileTaints(cur []corev1.Taint, key string, now time.Time) (out []corev1.Taint, changed bool) {
	have := map[corev1.TaintEffect]bool{}
	for _, t := range cur {
		if isManaged(t) && t.Key != key {
			changed = true
			continue
		}
		if isManaged(t) {
			have[t.Effect] = true
		}
		out = append(out, t)
	}
	if key == "" {
		return out, changed
	}
	ts := metav1.NewTime(now)
	for _, e := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		if !have[e] {
			t := corev1.Taint{Key: key, Effect: e}
			if e == corev1.TaintEffectNoExecute {
				t.TimeAdded = &ts
			}
			out = append(out, t)
			changed = true
		}
	}
	return out, changed
}

// UnknownConditions returns the node's conditions after its kubelet stopped reporting:
// every condition (and Ready, added if missing) becomes Unknown with reason
// NodeStatusUnknown; heartbeat times are kept. changed is false if they already were.
func UnknownConditions(conds []corev1.NodeCondition, now time.Time) (out []corev1.NodeCondition, changed bool) {
	ts := metav1.NewTime(now)
	sawReady := false
	for _, c := range conds {
		if c.Type == corev1.NodeReady {
			sawReady = true
		}
		if c.Status != corev1.ConditionUnknown {
			c.Status = corev1.ConditionUnknown
			c.Reason = "NodeStatusUnknown"
			c.Message = "Kubelet stopped posting node status."
			c.LastTransitionTime = ts
			changed = true
		}
		out = append(out, c)
	}
	if !sawReady {
		out = append(out, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.", LastTransitionTime: ts})
		changed = true
	}
	return out, changed
}

// Eviction is what the taint manager does with one pod on a tainted node.
type Eviction struct {
	// Now: delete the pod now.
	Now bool
	// After: look again after this long (0 with Now false: never, the pod tolerates forever).
	After time.Duration
}

// Decide applies the NoExecute taints of the pod's node to the pod, as upstream's taint
// manager: a taint the pod does not tolerate evicts it at once; tolerated taints evict it
// when the shortest tolerationSeconds among the tolerations used has passed since the taint
// was added. A pod with no toleration for the not-ready/unreachable taints is treated as if
// it tolerated them for defaultSeconds (the toleration admission adds by default); a
// negative defaultSeconds disables that.
func Decide(pod *corev1.Pod, taints []corev1.Taint, defaultSeconds int64, now time.Time) Eviction {
	deadline := time.Time{}
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		secs := int64(-1) // -1: tolerated forever
		matched := false
		for j := range pod.Spec.Tolerations {
			tol := &pod.Spec.Tolerations[j]
			if !tol.ToleratesTaint(logr.Discard(), t, false) {
				continue
			}
			matched = true
			if tol.TolerationSeconds == nil {
				continue
			}
			if s := max(*tol.TolerationSeconds, 0); secs < 0 || s < secs {
				secs = s
			}
		}
		if !matched {
			if (t.Key != corev1.TaintNodeUnreachable && t.Key != corev1.TaintNodeNotReady) || defaultSeconds < 0 {
				return Eviction{Now: true}
			}
			secs = defaultSeconds
		}
		if secs < 0 {
			continue
		}
		added := now
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		at := added.Add(time.Duration(min(secs, math.MaxInt64/int64(time.Second))) * time.Second)
		if deadline.IsZero() || at.Before(deadline) {
			deadline = at
		}
	}
	if deadline.IsZero() {
		return Eviction{}
	}
	if !now.Before(deadline) {
		return Eviction{Now: true}
	}
	return Eviction{After: deadline.Sub(now)}
}
