package handlers

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"

	"github.com/wasmkube/wasmkube/core/apiserver/crd"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// Custom objects on the wire: decoded with their CRD version's pruning and defaulting,
// answered in the request's version.

// customView turns a stored custom object or list into what the request's version
// serves: crd.Version.ForRead (upstream's pruning and defaulting on read, the None
// conversion) on a copy, so shared cached objects are never modified. A list's items
// are ForRead already (customlist.go builds them): only their apiVersion is checked.
func customView(res *registry.Resource, obj runtime.Object) runtime.Object {
	v := res.Custom
	if v == nil {
		return obj
	}
	if l, ok := obj.(*unstructured.UnstructuredList); ok {
		want := v.GVR.GroupVersion().String()
		same := true
		for i := range l.Items {
			same = same && l.Items[i].GetAPIVersion() == want
		}
		if same {
			return obj
		}
		c := &unstructured.UnstructuredList{Object: l.Object, Items: make([]unstructured.Unstructured, len(l.Items))}
		for i := range l.Items {
			c.Items[i] = *forRead(v, &l.Items[i])
		}
		return c
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return forRead(v, u)
	}
	return obj
}

func forRead(v *crd.Version, u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	v.ForRead(c)
	return c
}

// customDecoded prunes and defaults a decoded custom object; the pruned fields are
// errors under fieldValidation=Strict and warnings under Warn (as upstream's "unknown
// field" messages).
func customDecoded(res *registry.Resource, obj runtime.Object, fv fieldValidation) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || res.Custom == nil {
		return nil, nil
	}
	unknown := res.Custom.Decode(u)
	if len(unknown) == 0 || fv == fvIgnore {
		return nil, nil
	}
	msgs := make([]string, len(unknown))
	for i, p := range unknown {
		msgs[i] = fmt.Sprintf("unknown field %q", p)
	}
	if fv == fvStrict {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s",
			res.Kind, res.GVR.Version, res.Kind, joinComma(msgs)))
	}
	return msgs, nil
}

// decodeUnstructured decodes a request body into a custom object as upstream's JSON
// serializer does for unstructured objects: once, straight into a map, with duplicate
// fields reported unless fieldValidation is Ignore (unknown fields are the schema's
// business: customDecoded prunes them). Decoding through Unstructured's UnmarshalJSON
// scanned the body three times and, behind that custom unmarshaler, saw no duplicates.
func decodeUnstructured(data []byte, u *unstructured.Unstructured, fv fieldValidation) ([]error, error) {
	m := map[string]any{}
	var strictErrs []error
	var err error
	if fv == fvIgnore {
		err = kjson.UnmarshalCaseSensitivePreserveInts(data, &m)
	} else {
		strictErrs, err = kjson.UnmarshalStrict(data, &m, kjson.DisallowDuplicateFields)
	}
	if err != nil {
		return nil, err
	}
	u.Object = m
	if u.GetKind() == "" {
		return nil, runtime.NewMissingKindErr(string(data))
	}
	return strictErrs, nil
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// partialOf is the metadata of an unstructured object (PartialObjectMetadata).
func partialOf(obj runtime.Object) (metav1.ObjectMeta, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return metav1.ObjectMeta{}, false
	}
	m := metav1.ObjectMeta{
		Name: u.GetName(), GenerateName: u.GetGenerateName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		ResourceVersion: u.GetResourceVersion(), Generation: u.GetGeneration(), CreationTimestamp: u.GetCreationTimestamp(),
		DeletionTimestamp: u.GetDeletionTimestamp(), DeletionGracePeriodSeconds: u.GetDeletionGracePeriodSeconds(),
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(), OwnerReferences: u.GetOwnerReferences(), Finalizers: u.GetFinalizers(),
	}
	return m, true
}

// errCustomStrategic is upstream's answer to a strategic merge patch of a custom object.
func errCustomStrategic(res *registry.Resource) error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.GVR.GroupResource(), "",
		"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (strategic merge patch is not supported for custom resources)", 0, false)
}
