package apiserver

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// TestObjectReaderReadsStoredVersion: a resource served in two versions (autoscaling/v1
// HorizontalPodAutoscaler is a view of the stored autoscaling/v2, registry/versions.go) is read by
// policies in its stored version, whatever order the server's stores are walked in.
func TestObjectReaderReadsStoredVersion(t *testing.T) {
	s := &Server{stores: map[schema.GroupVersionResource]*registry.Store{
		registry.HPAV1.GVR: {Resource: registry.HPAV1},
		registry.HPAV2.GVR: {Resource: registry.HPAV2},
	}}
	// The stores map is walked in a random order: enough tries that a reader picking the
	// view on some walks is caught.
	for i := range 64 {
		r := newObjectReader(context.Background(), s)
		gvk, namespaced, ok := r.Resource("horizontalpodautoscalers")
		if !ok || !namespaced || gvk != registry.HPAV2.GVK() {
			t.Fatalf("reader %d: horizontalpodautoscalers read as %v (namespaced %v, served %v), want %v", i, gvk, namespaced, ok, registry.HPAV2.GVK())
		}
	}
}
