package fieldmanager

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Scale keeps managedFields through a resource's scale subresource, as upstream's scale
// storage does: the parent's entries that own the replicas field are shown to the Scale's
// field manager as owning the Scale's spec.replicas (managedfields.ScaleHandler), the
// Scale write is recorded there (subresource "scale"), and the result is mapped back onto
// the parent, so `kubectl scale` takes spec.replicas from an applier and a later apply
// of another value conflicts with it.
type Scale struct {
	fm       *managedfields.FieldManager
	parentGV schema.GroupVersion
	mappings managedfields.ResourcePathMappings
}

var scaleKind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// NewScale builds the scale field manager of a resource served as parentGV whose replicas
// are at replicas (spec.replicas; a custom resource's specReplicasPath). otherVersions
// are the resource's other versions, whose entries keep the same path.
func NewScale(parentGV schema.GroupVersion, replicas fieldpath.Path, otherVersions ...schema.GroupVersion) (*Scale, error) {
	// client-go ships no apply schema for Scale (it has no apply configuration); its
	// fields are scalars and metadata, whose deduced schema (maps granular) gives the same
	// field sets upstream's OpenAPI schema does.
	fm, err := managedfields.NewDefaultFieldManager(managedfields.NewDeducedTypeConverter(), runtime.UnsafeObjectConvertor(Scheme), noDefaults{}, Scheme,
		scaleKind, scaleKind.GroupVersion(), "scale", nil)
	if err != nil {
		return nil, fmt.Errorf("scale field manager of %v: %w", parentGV, err)
	}
	mappings := managedfields.ResourcePathMappings{parentGV.String(): replicas}
	for _, gv := range otherVersions {
		mappings[gv.String()] = replicas
	}
	return &Scale{fm: fm, parentGV: parentGV, mappings: mappings}, nil
}

// Update records a write of the Scale by manager: parent holds the parent's current
// entries, old is the Scale of the current object and next the request's. It returns the
// parent's entries to store.
func (s *Scale) Update(parent []metav1.ManagedFieldsEntry, old, next *autoscalingv1.Scale, manager string) ([]metav1.ManagedFieldsEntry, error) {
	h := managedfields.NewScaleHandler(parent, s.parentGV, s.mappings)
	old = old.DeepCopy()
	var err error
	if old.ManagedFields, err = h.ToSubresource(); err != nil {
		return nil, fmt.Errorf("managedFields of the scale subresource: %w", err)
	}
	out := s.fm.UpdateNoErrors(old, next.DeepCopy(), manager)
	return h.ToParent(out.(*autoscalingv1.Scale).ManagedFields)
}

// Apply serves a server-side apply of the Scale (PATCH application/apply-patch+yaml on
// /scale), as upstream's scale storage: parent's entries are shown to the Scale's field
// manager through the same mapping as Update, the apply configuration (a Scale) is merged
// into old with conflicts and force as for any apply, and the result's entries are mapped
// back onto the parent. It returns the applied Scale, the parent's entries to store and
// the warnings for the client.
func (s *Scale) Apply(parent []metav1.ManagedFieldsEntry, old *autoscalingv1.Scale, body []byte, opts ApplyOptions) (*autoscalingv1.Scale, []metav1.ManagedFieldsEntry, []string, error) {
	patch, name, warnings, err := decodeApplyPatch(scaleKind.Kind, old, body, opts.Validation)
	if err != nil {
		return nil, nil, nil, err
	}
	h := managedfields.NewScaleHandler(parent, s.parentGV, s.mappings)
	old = old.DeepCopy()
	if old.ManagedFields, err = h.ToSubresource(); err != nil {
		return nil, nil, nil, fmt.Errorf("managedFields of the scale subresource: %w", err)
	}
	out, err := s.fm.Apply(old, patch, opts.Manager, opts.Force)
	if err != nil {
		return nil, nil, nil, applyError(scaleKind.Kind, name, err)
	}
	sc, ok := out.(*autoscalingv1.Scale)
	if !ok {
		return nil, nil, nil, fmt.Errorf("apply of the scale subresource returned a %T", out)
	}
	entries, err := h.ToParent(sc.ManagedFields)
	if err != nil {
		return nil, nil, nil, err
	}
	return sc, entries, warnings, nil
}
