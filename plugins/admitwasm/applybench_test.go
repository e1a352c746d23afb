package admitwasm

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func BenchmarkApplyPatch(b *testing.B) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", Labels: map[string]string{"team": "a"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}, RestartPolicy: "Always", DNSPolicy: "ClusterFirst"}}
	doc := objectJSON(pod, "v1", "Pod")
	patch := []byte(`[{"op":"add","path":"/spec/containers/0/resources","value":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"256Mi"}}}]`)
	b.ReportAllocs()
	for range b.N {
		if _, err := ApplyPatch(doc, pod, podGVK, patch); err != nil {
			b.Fatal(err)
		}
	}
}
