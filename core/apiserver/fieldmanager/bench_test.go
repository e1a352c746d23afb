package fieldmanager

import (
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LargeCRD returns a CustomResourceDefinition of about size bytes of JSON (properties with
// descriptions, nested three deep), the kind of CRD applied server-side because its
// last-applied annotation would not fit.
func LargeCRD(name string, size int) []byte {
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	def := apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "s.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: name + "s", Singular: name, Kind: "Big", ListKind: "BigList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}}}}}}},
	}
	for i := 0; ; i++ {
		b, _ := json.Marshal(def)
		if len(b) >= size {
			return b
		}
		inner := map[string]apiextensionsv1.JSONSchemaProps{}
		for j := 0; j < 8; j++ {
			inner[fmt.Sprintf("field%d", j)] = apiextensionsv1.JSONSchemaProps{Type: "string",
				Description: fmt.Sprintf("Field %d of group %d: a description long enough to look like generated API documentation.", j, i)}
		}
		props[fmt.Sprintf("group%d", i)] = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: inner,
			Description: fmt.Sprintf("Group %d of settings.", i)}
	}
}

// BenchmarkApplyLargeCRD: the field manager's share of a server-side apply of a 200 KB
// CRD (create by apply, then a re-apply with one description changed).
//
//	go test ./core/apiserver/fieldmanager -run '^$' -bench ApplyLargeCRD
func BenchmarkApplyLargeCRD(b *testing.B) {
	m := newManager(b, Resource{Kind: apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), Subresources: []string{"status"},
		ResetFields: DefaultResetFields(true)})
	body := LargeCRD("big", 200<<10)
	b.SetBytes(int64(len(body)))
	live, _, err := m.Apply(m.New(), body, ApplyOptions{Manager: "kubectl"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := m.Apply(live.DeepCopyObject(), body, ApplyOptions{Manager: "kubectl"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdatePod: the field manager's share of a pod update (one label changed).
func BenchmarkUpdatePod(b *testing.B) {
	m := newManager(b, Resource{Kind: podKind, Subresources: []string{"status"}, ResetFields: DefaultResetFields(true)})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	live := m.Update(m.New(), pod, "kubectl", "")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := live.DeepCopyObject().(*corev1.Pod)
		next.Labels["rev"] = fmt.Sprint(i)
		m.Update(live.DeepCopyObject(), next, "kubectl", "")
	}
}
