package crd

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// path splits a scale subresource's JSON path (.spec.replicas) into its fields.
func path(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

// Replicas reads spec and status replicas and the label selector through the version's
// scale subresource paths (status replicas and selector are 0 and "" when unset).
func (v *Version) Replicas(u *unstructured.Unstructured) (spec, status int32, selector string, err error) {
	if v.Scale == nil {
		return 0, 0, "", fmt.Errorf("%s has no scale subresource", v.GVR.Resource)
	}
	n, _, err := unstructured.NestedInt64(u.Object, path(v.Scale.SpecReplicasPath)...)
	if err != nil {
		return 0, 0, "", fmt.Errorf("%s %s: %s: %w", v.Kind, u.GetName(), v.Scale.SpecReplicasPath, err)
	}
	spec = int32(n)
	if n, ok, err := unstructured.NestedInt64(u.Object, path(v.Scale.StatusReplicasPath)...); err == nil && ok {
		status = int32(n)
	}
	if p := v.Scale.LabelSelectorPath; p != nil {
		if s, ok, err := unstructured.NestedString(u.Object, path(*p)...); err == nil && ok {
			selector = s
		}
	}
	return spec, status, selector, nil
}

// SetReplicas writes spec replicas through the scale subresource's specReplicasPath.
func (v *Version) SetReplicas(u *unstructured.Unstructured, n int32) error {
	if v.Scale == nil {
		return fmt.Errorf("%s has no scale subresource", v.GVR.Resource)
	}
	return unstructured.SetNestedField(u.Object, int64(n), path(v.Scale.SpecReplicasPath)...)
}

// CopyStatus sets dst's status to src's (removing it when src has none): the status
// subresource writes only status, and main writes never change it.
func CopyStatus(dst, src *unstructured.Unstructured) {
	st, ok := src.Object["status"]
	if !ok {
		delete(dst.Object, "status")
		return
	}
	dst.Object["status"] = runtime.DeepCopyJSONValue(st)
}

// WithoutMeta returns the object's content other than metadata and status, which
// metadata.generation counts changes of (upstream: generation moves on any change but
// to metadata and, with the status subresource, status).
func WithoutMeta(u *unstructured.Unstructured, status bool) map[string]any {
	out := make(map[string]any, len(u.Object))
	for k, val := range u.Object {
		if k == "metadata" || (status && k == "status") {
			continue
		}
		out[k] = val
	}
	return out
}
