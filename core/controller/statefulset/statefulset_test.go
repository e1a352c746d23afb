package statefulset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOrdinal(t *testing.T) {
	for pod, want := range map[string]int{"web-0": 0, "web-12": 12, "web-": -1, "web-01": -1, "web-x": -1, "webby-1": -1, "web-1-2": -1, "other-1": -1} {
		if got := Ordinal("web", pod); got != want {
			t.Errorf("Ordinal(web, %s) = %d, want %d", pod, got, want)
		}
	}
}

func TestNewPod(t *testing.T) {
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "u"},
		Spec: appsv1.StatefulSetSpec{ServiceName: "db-headless",
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}}
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}}
	p := NewPod(ss, tmpl, "db-abc", 3)
	if p.Name != "db-3" || p.Spec.Hostname != "db-3" || p.Spec.Subdomain != "db-headless" ||
		p.Labels[RevisionLabel] != "db-abc" || p.Labels[PodIndexLabel] != "3" || p.Labels[PodNameLabel] != "db-3" || p.Labels["app"] != "db" {
		t.Errorf("pod %s hostname %s subdomain %s labels %v", p.Name, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-3" {
		t.Errorf("volumes %+v", p.Spec.Volumes)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "StatefulSet" || ref.UID != "u" {
		t.Errorf("owner %+v", ref)
	}
	if tmpl.Labels[RevisionLabel] != "" {
		t.Error("NewPod changed the template")
	}
}
