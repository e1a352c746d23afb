package podstate

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AdoptPatch returns a JSON merge patch that makes owner obj's controller. The patch carries
// obj's uid and resourceVersion, so it fails with a conflict instead of adopting an object
// that changed (or was replaced) since the controller listed it.
func AdoptPatch(obj metav1.Object, ref metav1.OwnerReference) ([]byte, error) {
	refs := append([]metav1.OwnerReference(nil), obj.GetOwnerReferences()...)
	refs = append(refs, ref)
	return refsPatch(obj, refs)
}

// ReleasePatch returns a JSON merge patch that removes the ownerReference with uid owner.
func ReleasePatch(obj metav1.Object, owner types.UID) ([]byte, error) {
	var refs []metav1.OwnerReference
	for _, r := range obj.GetOwnerReferences() {
		if r.UID != owner {
			refs = append(refs, r)
		}
	}
	return refsPatch(obj, refs)
}

func refsPatch(obj metav1.Object, refs []metav1.OwnerReference) ([]byte, error) {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":             obj.GetUID(),
		"resourceVersion": obj.GetResourceVersion(),
		"ownerReferences": refs,
	}})
}
