package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusOnlyChange decides whether an API update wakes the pod worker: only a change of
// status (with the resourceVersion and managedFields that come with any write) may be
// skipped; anything the worker acts on must wake it.
func TestStatusOnlyChange(t *testing.T) {
	base := func() *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "p", Namespace: "default", UID: "u1", ResourceVersion: "10",
				Labels:      map[string]string{"app": "web"},
				Annotations: map[string]string{"a": "1"},
				Finalizers:  []string{"example.com/keep"},
				ManagedFields: []metav1.ManagedFieldsEntry{{
					Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
				}},
			},
			Spec: v1.PodSpec{
				NodeName:   "n1",
				Containers: []v1.Container{{Name: "app", Image: "busybox"}},
			},
			Status: v1.PodStatus{Phase: v1.PodPending},
		}
	}
	with := func(change func(p *v1.Pod)) *v1.Pod {
		p := base()
		change(p)
		return p
	}
	deletion := metav1.NewTime(time.Unix(1700000000, 0))
	for _, tc := range []struct {
		name     string
		old, cur *v1.Pod
		want     bool
	}{
		{"first sight (old nil)", nil, base(), false},
		{"deleted (cur nil)", base(), nil, false},
		{"both nil", nil, nil, false},
		{"identical", base(), base(), true},
		{"status only", base(), with(func(p *v1.Pod) {
			p.ResourceVersion = "11"
			p.Status.Phase = v1.PodRunning
			p.Status.PodIP = "10.42.0.5"
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		}), true},
		{"resourceVersion only", base(), with(func(p *v1.Pod) { p.ResourceVersion = "12" }), true},
		{"managedFields and resourceVersion", base(), with(func(p *v1.Pod) {
			p.ResourceVersion = "13"
			p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: "other", Operation: metav1.ManagedFieldsOperationApply})
		}), true},
		{"label changed", base(), with(func(p *v1.Pod) { p.ResourceVersion = "14"; p.Labels["app"] = "db" }), false},
		{"label added", base(), with(func(p *v1.Pod) { p.Labels["tier"] = "front" }), false},
		{"annotation changed", base(), with(func(p *v1.Pod) { p.Annotations["a"] = "2" }), false},
		{"annotations removed", base(), with(func(p *v1.Pod) { p.Annotations = nil }), false},
		{"deletionTimestamp set", base(), with(func(p *v1.Pod) {
			p.ResourceVersion = "15"
			p.DeletionTimestamp = &deletion
			grace := int64(30)
			p.DeletionGracePeriodSeconds = &grace
		}), false},
		{"finalizer removed", base(), with(func(p *v1.Pod) { p.Finalizers = nil }), false},
		{"finalizer added", base(), with(func(p *v1.Pod) { p.Finalizers = append(p.Finalizers, "example.com/other") }), false},
		{"container image changed", base(), with(func(p *v1.Pod) {
			p.ResourceVersion = "16"
			p.Spec.Containers[0].Image = "busybox:1.36"
		}), false},
		{"spec and status changed", base(), with(func(p *v1.Pod) {
			p.Spec.ActiveDeadlineSeconds = new(int64)
			p.Status.Phase = v1.PodRunning
		}), false},
	} {
		if got := statusOnlyChange(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: statusOnlyChange = %v, want %v", tc.name, got, tc.want)
		}
	}
}
