package deployment

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as upstream (kubectl rollout status reads ProgressDeadlineExceeded).
const (
	ReasonNewRSAvailable   = "NewReplicaSetAvailable"
	ReasonRSUpdated        = "ReplicaSetUpdated"
	ReasonNewRSCreated     = "NewReplicaSetCreated"
	ReasonFoundNewRS       = "FoundNewReplicaSet"
	ReasonTimedOut         = "ProgressDeadlineExceeded"
	ReasonPaused           = "DeploymentPaused"
	ReasonResumed          = "DeploymentResumed"
	ReasonMinAvailable     = "MinimumReplicasAvailable"
	ReasonMinUnavailable   = "MinimumReplicasUnavailable"
	defaultProgressSeconds = 600
)

// GetCondition returns the condition of type t, or nil.
func GetCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// SetCondition sets c in st. An unchanged status and reason keep the old condition
// (timestamps included); an unchanged status keeps its lastTransitionTime.
func SetCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := GetCondition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: ts}
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds == nil || *d.Spec.ProgressDeadlineSeconds != int32(^uint32(0)>>1)
}

func progressDeadline(d *appsv1.Deployment) time.Duration {
	if d.Spec.ProgressDeadlineSeconds == nil {
		return defaultProgressSeconds * time.Second
	}
	return time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
}

// CalculateStatus is d's status from its ReplicaSets' statuses, with the Available
// condition set; Progressing is left as d had it.
func CalculateStatus(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) appsv1.DeploymentStatus {
	var actual, ready int32
	for _, rs := range all {
		if rs != nil {
			actual += rs.Status.Replicas
			ready += rs.Status.ReadyReplicas
		}
	}
	available := availableCount(all)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            actual,
		ReadyReplicas:       ready,
		AvailableReplicas:   available,
		UnavailableReplicas: max(specCount(all)-available, 0),
		CollisionCount:      d.Status.CollisionCount,
	}
	if newRS != nil {
		st.UpdatedReplicas = newRS.Status.Replicas
	}
	st.Conditions = append(st.Conditions, d.Status.Conditions...)
	// A ReplicaSet that cannot create or delete its pods (admission, quota) surfaces on the
	// Deployment, as upstream, so kubectl describe shows why a rollout is stuck.
	if f := replicaFailure(all); f != nil {
		SetCondition(&st, newCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, f.Reason, f.Message, now))
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	if available >= desired(d)-MaxUnavailable(d) {
		SetCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinAvailable, "Deployment has minimum availability.", now))
	} else {
		SetCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinUnavailable, "Deployment does not have minimum availability.", now))
	}
	return st
}

func replicaFailure(all []*appsv1.ReplicaSet) *appsv1.ReplicaSetCondition {
	for _, rs := range all {
		if rs == nil {
			continue
		}
		for i := range rs.Status.Conditions {
			c := &rs.Status.Conditions[i]
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
				return c
			}
		}
	}
	return nil
}

// Complete reports whether st shows d fully rolled out: every desired replica updated and
// available, no old replica left, and the current generation observed.
func Complete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := desired(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

// progressing reports whether st moved the rollout forward compared with d's last status.
func progressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

// timedOut reports whether the rollout has made no progress for progressDeadlineSeconds.
func timedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	c := GetCondition(*st, appsv1.DeploymentProgressing)
	if c == nil || c.Reason == ReasonNewRSAvailable {
		return false
	}
	if c.Reason == ReasonTimedOut {
		return true
	}
	return c.LastUpdateTime.Add(progressDeadline(d)).Before(now)
}

// RolloutStatus is the status syncRolloutStatus writes: CalculateStatus plus the Progressing
// condition, and how long until the progress deadline should be checked again (0: no need).
func RolloutStatus(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) (appsv1.DeploymentStatus, time.Duration) {
	st := CalculateStatus(d, all, newRS, now)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
		return st, 0
	}
	cur := GetCondition(d.Status, appsv1.DeploymentProgressing)
	done := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewRSAvailable
	name := ""
	if newRS != nil {
		name = newRS.Name
	}
	if !done && !d.Spec.Paused {
		switch {
		case Complete(d, &st):
			SetCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable,
				fmt.Sprintf("ReplicaSet %q has successfully progressed.", name), now))
		case progressing(d, &st):
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated,
				fmt.Sprintf("ReplicaSet %q is progressing.", name), now)
			if cur != nil && cur.Status == corev1.ConditionTrue {
				c.LastTransitionTime = cur.LastTransitionTime
			}
			removeCondition(&st, appsv1.DeploymentProgressing)
			st.Conditions = append(st.Conditions, c)
		case timedOut(d, &st, now):
			SetCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonTimedOut,
				fmt.Sprintf("ReplicaSet %q has timed out progressing.", name), now))
		}
	}
	// Look again when the deadline would pass, so a stuck rollout is reported even if
	// nothing else happens.
	var after time.Duration
	if c := GetCondition(st, appsv1.DeploymentProgressing); c != nil && !d.Spec.Paused && !Complete(d, &st) &&
		c.Reason != ReasonTimedOut && c.Reason != ReasonNewRSAvailable {
		after = c.LastUpdateTime.Add(progressDeadline(d)).Sub(now) + time.Second
		if after < time.Second {
			after = time.Second
		}
	}
	return st, after
}
