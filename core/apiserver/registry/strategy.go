package registry

import (
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/crd"
)

// The store's hooks into the object's shape: status and spec are found by reflection on
// built-in types and by key on custom (unstructured) objects.

// clearStatus drops status from a new object of a resource with the status subresource.
func clearStatus(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, "status")
		return
	}
	if f := FieldOf(obj, "Status"); f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
}

// copyStatus sets dst's status to src's.
func copyStatus(dst, src runtime.Object) {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		if su, ok := src.(*unstructured.Unstructured); ok {
			crd.CopyStatus(du, su)
		}
		return
	}
	FieldOf(dst, "Status").Set(FieldOf(src, "Status"))
}

// specChanged reports whether an update changes what metadata.generation counts.
func specChanged(res *Resource, cur, out runtime.Object) bool {
	if cu, ok := cur.(*unstructured.Unstructured); ok {
		ou := out.(*unstructured.Unstructured)
		return !apiequality.Semantic.DeepEqual(crd.WithoutMeta(cu, res.HasStatus()), crd.WithoutMeta(ou, res.HasStatus()))
	}
	return !apiequality.Semantic.DeepEqual(FieldOf(cur, "Spec").Interface(), FieldOf(out, "Spec").Interface())
}
