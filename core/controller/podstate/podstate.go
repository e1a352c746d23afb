// Package podstate holds the pure decisions about pods that several controllers share:
// whether a pod counts (active), is ready or available, which pods to delete first when
// scaling down, and whether an object is claimed by, adoptable by, or released from an owner.
package podstate

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// IsActive reports whether a pod counts towards its owner's replicas: not being deleted and
// not finished.
func IsActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// readyCondition returns the pod's Ready condition, or nil.
func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsAvailable reports whether the pod has been ready for at least minReadySeconds at now.
func IsAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := readyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	d := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(d).After(now)
}

// AvailableIn returns how long until a ready pod becomes available (0 if it already is or
// is not ready), so a controller can look again exactly then.
func AvailableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	c := readyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue || minReadySeconds == 0 {
		return 0
	}
	left := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if left < 0 {
		return 0
	}
	return left
}

func phaseRank(p corev1.PodPhase) int {
	switch p {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 3
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// lessForDeletion orders pods so that the cheapest to lose come first, as upstream's
// ActivePods ordering: unscheduled before scheduled; Pending before Unknown before Running;
// not ready before ready; ready for less time before ready for longer; more restarts before
// fewer; newer before older.
func lessForDeletion(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if ra, rb := phaseRank(a.Status.Phase), phaseRank(b.Status.Phase); ra != rb {
		return ra < rb
	}
	if IsReady(a) != IsReady(b) {
		return !IsReady(a)
	}
	if IsReady(a) && IsReady(b) {
		ta, tb := readyCondition(a).LastTransitionTime, readyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return tb.Before(&ta)
		}
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// ForDeletion returns the first n pods to delete when scaling down, in deletion order. The
// input is not modified.
func ForDeletion(pods []*corev1.Pod, n int) []*corev1.Pod {
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool { return lessForDeletion(sorted[i], sorted[j]) })
	if n > len(sorted) {
		n = len(sorted)
	}
	if n < 0 {
		n = 0
	}
	return sorted[:n]
}

// Claim is what an owner should do with an object it lists.
type Claim int

const (
	// Ignore: the object is not the owner's and must not be touched.
	Ignore Claim = iota
	// Owned: the object is the owner's and matches its selector.
	Owned
	// Adopt: the object has no controller and matches; the owner should add itself.
	Adopt
	// Release: the object names the owner as controller but no longer matches.
	Release
)

// Decide classifies obj for an owner with the given uid and selector, as upstream's
// ControllerRefManager does. Deleting owners adopt nothing; deleting objects are never adopted.
func Decide(obj metav1.Object, ownerUID types.UID, ownerDeleting bool, sel labels.Selector) Claim {
	ref := metav1.GetControllerOfNoCopy(obj)
	match := sel.Matches(labels.Set(obj.GetLabels()))
	switch {
	case ref != nil && ref.UID == ownerUID:
		if match {
			return Owned
		}
		if ownerDeleting {
			return Owned
		}
		return Release
	case ref != nil:
		return Ignore
	case match && !ownerDeleting && obj.GetDeletionTimestamp() == nil:
		return Adopt
	}
	return Ignore
}

// ControllerRef returns the ownerReference an owner of the given kind sets on what it creates.
func ControllerRef(owner metav1.Object, apiVersion, kind string) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: &t, BlockOwnerDeletion: &t}
}
