package fieldmanager

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// unvalidated converts the built-in Go objects the API server decoded itself without
// validating them against the schema again (structured-merge-diff's AsTypedUnvalidated):
// a Go struct cannot hold a field its schema lacks or a value of another type, and the
// validation walk was the largest share of an update's managedFields cost (12% of the
// whole process's CPU in BenchmarkPodUpdate, docs/benchmarks.md). Unstructured objects
// (apply configurations, custom resources) are validated as before. An update whose
// unvalidated merge fails (a list with duplicate keys, which validation would have
// allowed) is recorded again through the validating converter (Manager.Update).
type unvalidated struct {
	managedfields.TypeConverter
	types sync.Map // schema.GroupVersionKind -> typeOf
}

type typeOf struct {
	schema *smdschema.Schema
	ref    smdschema.TypeRef
}

func (c *unvalidated) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return c.TypeConverter.ObjectToTyped(obj, opts...)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if t, ok := c.types.Load(gvk); ok {
		v, err := value.NewValueReflect(obj)
		if err != nil {
			return nil, err
		}
		return typed.AsTypedUnvalidated(v, t.(typeOf).schema, t.(typeOf).ref), nil
	}
	tv, err := c.TypeConverter.ObjectToTyped(obj, opts...)
	if err != nil {
		return nil, err
	}
	c.types.Store(gvk, typeOf{schema: tv.Schema(), ref: tv.TypeRef()})
	return tv, nil
}
