package namespace

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeletable(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Verbs: []string{"list", "delete", "deletecollection", "watch"}},
			{Name: "pods/status", Namespaced: true, Verbs: []string{"get", "update"}},
			{Name: "nodes", Namespaced: false, Verbs: []string{"list", "delete"}},
			{Name: "bindings", Namespaced: true, Verbs: []string{"create"}},
			{Name: "events", Namespaced: true, Verbs: []string{"list", "delete"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Namespaced: true, Verbs: []string{"list", "delete"}},
		}},
	}
	got := Deletable(lists)
	want := []string{"/v1/pods", "/v1/events", "apps/v1/deployments"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, r := range got {
		if s := r.GVR.Group + "/" + r.GVR.Version + "/" + r.GVR.Resource; s != want[i] {
			t.Errorf("[%d] = %s, want %s", i, s, want[i])
		}
	}
	if !got[0].DeleteCollection || got[1].DeleteCollection {
		t.Error("deletecollection verb not honoured")
	}
}
