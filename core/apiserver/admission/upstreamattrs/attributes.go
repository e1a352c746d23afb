// Package upstreamattrs puts our admission attributes in k8s.io/apiserver's vocabulary, so
// upstream's admission libraries (webhook matching and requests, CEL policies) run on
// our chain's requests.
package upstreamattrs

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Versioned is a in upstream's vocabulary. Our objects are already the served version
// (k8s.io/api types or unstructured), so the versioned object is a copy of the request's
// object with its apiVersion and kind set: what an AdmissionReview carries and what a
// patch applies to. Nothing done to it touches a.Object until SetInPlace.
func Versioned(a *admission.Attributes) *k8sadmission.VersionedAttributes {
	var opts runtime.Object
	var dryRun []string
	if a.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	switch a.Operation {
	case admission.Create:
		opts = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}, DryRun: dryRun}
	case admission.Update:
		opts = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}, DryRun: dryRun}
	case admission.Delete:
		opts = &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}, DryRun: dryRun}
	}
	obj, old := versioned(a.Object, a.Kind), versioned(a.OldObject, a.Kind)
	u := &user.DefaultInfo{Name: a.User.Name, Groups: a.User.Groups}
	attrs := k8sadmission.NewAttributesRecord(obj, old, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource,
		k8sadmission.Operation(a.Operation), opts, a.DryRun, u)
	va := &k8sadmission.VersionedAttributes{Attributes: record{Attributes: attrs, a: a}, VersionedKind: a.Kind}
	if obj != nil {
		va.VersionedObject.Set(obj)
	}
	if old != nil {
		va.VersionedOldObject.Set(old)
	}
	return va
}

// record is upstream's attributes record whose audit annotations and reinvocation state
// are a's: what an upstream plugin records outlives the record (made afresh for each
// plugin and pass).
type record struct {
	k8sadmission.Attributes
	a *admission.Attributes
}

// AddAnnotation records key=value with the request.
func (r record) AddAnnotation(key, value string) error {
	r.a.AddAuditAnnotation(key, value)
	return nil
}

// AddAnnotationWithLevel records key=value with the request (every level alike).
func (r record) AddAnnotationWithLevel(key, value string, _ auditinternal.Level) error {
	r.a.AddAuditAnnotation(key, value)
	return nil
}

// GetReinvocationContext is the chain's reinvocation state (admission.Attributes).
func (r record) GetReinvocationContext() k8sadmission.ReinvocationContext { return reinvocation{r.a} }

// reinvocation is upstream's ReinvocationContext over our chain's: the second pass is
// the chain's, plugins' values are kept in the request's state.
type reinvocation struct{ a *admission.Attributes }

type valueKey string

func (r reinvocation) IsReinvoke() bool              { return r.a.IsReinvocation() }
func (r reinvocation) SetIsReinvoke()                {} // the chain's to decide
func (r reinvocation) ShouldReinvoke() bool          { return r.a.ReinvocationRequested() }
func (r reinvocation) SetShouldReinvoke()            { r.a.RequestReinvocation() }
func (r reinvocation) SetValue(plugin string, v any) { r.a.SetState(valueKey(plugin), v) }
func (r reinvocation) Value(plugin string) any       { return r.a.State(valueKey(plugin)) }

// versioned copies obj with its apiVersion and kind set (nil stays nil).
func versioned(obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	if obj == nil {
		return nil
	}
	cp := obj.DeepCopyObject()
	cp.GetObjectKind().SetGroupVersionKind(gvk)
	return cp
}

// SetInPlace makes dst hold src's content: the API server keeps the pointer it handed to
// the chain ("mutating plugins change it in place"). Both are the same Go type.
func SetInPlace(dst, src runtime.Object) error {
	type contentSetter interface {
		SetUnstructuredContent(map[string]any)
		UnstructuredContent() map[string]any
	}
	if d, ok := dst.(contentSetter); ok {
		s, ok := src.(contentSetter)
		if !ok {
			return fmt.Errorf("patched object is %T, want %T", src, dst)
		}
		d.SetUnstructuredContent(s.UnstructuredContent())
		return nil
	}
	return assign(dst, src)
}
