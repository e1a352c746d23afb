package webhook

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Upstream's request building, rule matching and CEL matchConditions take upstream's
// admission.Attributes and VersionedAttributes; these adapt ours to them. Our objects are
// already the served version (k8s.io/api types or unstructured), so the "versioned"
// object is a copy of the request's object with its apiVersion and kind set, which is
// what the AdmissionReview carries and what a webhook's patch applies to.

// upstreamAttributes is a in upstream's vocabulary; the object is versioned (a copy
// with TypeMeta), so nothing a webhook does touches a.Object until its patch is applied.
func upstreamAttributes(a *admission.Attributes) *k8sadmission.VersionedAttributes {
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
	va := &k8sadmission.VersionedAttributes{Attributes: attrs, VersionedKind: a.Kind}
	if obj != nil {
		va.VersionedObject.Set(obj)
	}
	if old != nil {
		va.VersionedOldObject.Set(old)
	}
	return va
}

// versioned copies obj with its apiVersion and kind set (nil stays nil).
func versioned(obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	if obj == nil {
		return nil
	}
	cp := obj.DeepCopyObject()
	cp.GetObjectKind().SetGroupVersionKind(gvk)
	return cp
}

// setInPlace makes dst hold src's content: the API server keeps the pointer it handed to
// the chain ("mutating plugins change it in place"). Both are the same Go type.
func setInPlace(dst, src runtime.Object) error {
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
