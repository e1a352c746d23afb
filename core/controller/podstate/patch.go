package podstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

// PatchFunc sends a JSON merge patch to one object of the kind being claimed.
type PatchFunc func(ctx context.Context, namespace, name string, patch []byte) error

// ClaimAll applies Decide to every candidate, as upstream's ControllerRefManager does:
// adopts (through patch) the orphans that match, releases the owned ones that no longer
// match, and returns what the owner controls afterwards. kind names the objects in errors.
// An object that disappeared meanwhile is skipped; other failures are joined.
func ClaimAll[T metav1.Object](ctx context.Context, candidates []T, owner metav1.Object, ref metav1.OwnerReference,
	sel labels.Selector, kind string, patch PatchFunc) ([]T, error) {
	deleting := owner.GetDeletionTimestamp() != nil
	var out []T
	var errs []error
	for _, obj := range candidates {
		switch Decide(obj, owner.GetUID(), deleting, sel) {
		case Owned:
			out = append(out, obj)
		case Adopt:
			p, err := AdoptPatch(obj, ref)
			if err == nil {
				err = patch(ctx, obj.GetNamespace(), obj.GetName(), p)
			}
			if err == nil {
				out = append(out, obj)
			} else if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("adopt %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err))
			}
		case Release:
			p, err := ReleasePatch(obj, owner.GetUID())
			if err == nil {
				err = patch(ctx, obj.GetNamespace(), obj.GetName(), p)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("release %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err))
			}
		}
	}
	return out, errors.Join(errs...)
}
