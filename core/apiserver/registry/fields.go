package registry

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/fieldmanager"
)

// fieldManagers holds each resource's field manager, built on its first write: the
// built-in schemas are parsed once for all, a CRD version's when it is first written
// (core/apiserver/fieldmanager; docs/server-side-apply.md). Keyed by the *Resource, so a
// CRD recompiled into a new Resource gets a new one.
var fieldManagers sync.Map // *Resource -> *resourceFields

type resourceFields struct {
	once  sync.Once
	m     *fieldmanager.Manager
	scale *fieldmanager.Scale
	err   error
}

// writeSubresources are the subresources whose writes keep managedFields entries of their
// own (scale has its own manager; binding, eviction and token create other objects).
var writeSubresources = map[string]bool{"status": true, "finalize": true, "ephemeralcontainers": true}

// FieldManager returns the resource's field manager and, for a resource with a scale
// subresource, the Scale's.
func (r *Resource) FieldManager() (*fieldmanager.Manager, *fieldmanager.Scale, error) {
	v, _ := fieldManagers.LoadOrStore(r, &resourceFields{})
	f := v.(*resourceFields)
	f.once.Do(func() { f.m, f.scale, f.err = r.buildFieldManager() })
	return f.m, f.scale, f.err
}

func (r *Resource) buildFieldManager() (*fieldmanager.Manager, *fieldmanager.Scale, error) {
	fr := fieldmanager.Resource{Kind: r.GVK(), ResetFields: r.resetFields()}
	for _, s := range r.Subresources {
		if writeSubresources[s] {
			fr.Subresources = append(fr.Subresources, s)
		}
	}
	var others []schema.GroupVersion
	replicas := fieldpath.MakePathOrDie("spec", "replicas")
	if v := r.Custom; v != nil {
		tc, err := fieldmanager.CRDTypeConverter(v.Definition())
		if err != nil {
			return nil, nil, err
		}
		fr.Types, fr.Custom = tc, true
		for _, ver := range v.Definition().Spec.Versions {
			if ver.Name != r.GVR.Version {
				others = append(others, schema.GroupVersion{Group: r.GVR.Group, Version: ver.Name})
			}
		}
		if v.Scale != nil {
			var parts []any
			for _, p := range strings.Split(strings.TrimPrefix(v.Scale.SpecReplicasPath, "."), ".") {
				parts = append(parts, p)
			}
			p, err := fieldpath.MakePath(parts...)
			if err != nil {
				return nil, nil, fmt.Errorf("specReplicasPath %q: %w", v.Scale.SpecReplicasPath, err)
			}
			replicas = p
		}
	}
	m, err := fieldmanager.New(fr)
	if err != nil {
		return nil, nil, err
	}
	var sc *fieldmanager.Scale
	if r.HasSub("scale") {
		if sc, err = fieldmanager.NewScale(r.GVR.GroupVersion(), replicas, others...); err != nil {
			return nil, nil, err
		}
	}
	return m, sc, nil
}

// resetFields mirrors mergeUpdate: the main resource keeps status (when it has a status
// subresource), /status keeps everything but status (nodes/status also takes labels and
// annotations, as upstream's node status strategy, which resets only spec), /finalize
// only spec.finalizers, /ephemeralcontainers only spec.ephemeralContainers.
func (r *Resource) resetFields() map[string]*fieldpath.Set {
	out := fieldmanager.DefaultResetFields(r.HasStatus())
	if r.Kind == "Node" && r.Custom == nil {
		out["status"] = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	}
	rest := fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("status"))
	out["finalize"] = rest
	out["ephemeralcontainers"] = rest
	return out
}

// trackUpdate records a write in managedFields as an Update by rq.Manager (upstream's
// UpdateNoErrors: obj gets live's entries plus the fields this write changed, or the
// entries the request set itself when they are valid). live is nil on a create. A
// resource whose field manager cannot be built keeps live's entries: ownership tracking
// never fails a write.
func (st *Store) trackUpdate(rq *WriteRequest, live, obj runtime.Object) runtime.Object {
	fm, _, err := st.Resource.FieldManager()
	if err != nil {
		if live != nil {
			ObjMeta(obj).SetManagedFields(ObjMeta(live).GetManagedFields())
		} else {
			ObjMeta(obj).SetManagedFields(nil)
		}
		return obj
	}
	sub := rq.Subresource
	if live == nil {
		live, sub = fm.New(), ""
	}
	return fm.Update(live, obj, rq.Manager, sub)
}

// ServerManager is the manager of the objects the API server writes itself (the default
// namespaces, the kubernetes Service and its endpoints, bootstrap RBAC, the system priority
// classes): upstream's API server writes them through its loopback client, whose user agent
// makes its entries "kube-apiserver"; tools that filter managers by name (GitOps diffs that
// ignore fields the server owns) find the same name here.
const ServerManager = "kube-apiserver"

// ControllerManager is the manager of the objects upstream's controller manager writes and
// wasmkube's API server writes in its stead (each namespace's default ServiceAccount and
// kube-root-ca.crt ConfigMap, the aggregated ClusterRoles' rules).
const ControllerManager = "kube-controller-manager"

// TrackServerWrite records a write the server makes itself, outside a request, as an
// Update by manager (ServerManager or ControllerManager): obj gets live's entries plus the
// fields this write changed (all of obj's on a create, live nil). It never fails, as
// trackUpdate.
func (st *Store) TrackServerWrite(manager string, live, obj runtime.Object) runtime.Object {
	return st.trackUpdate(&WriteRequest{Manager: manager}, live, obj)
}

// admit runs the admission chain and undoes a mutating plugin's change that leaves
// managedFields undecodable (upstream's ManagedFieldsValidatingAdmissionController), with
// a warning saying so. Entries a plugin did not touch are not decoded again.
func (st *Store) admit(ctx context.Context, a *admission.Attributes) error {
	m := ObjMeta(a.Object)
	before := slices.Clone(m.GetManagedFields())
	if err := st.Chain.Admit(ctx, a); err != nil {
		return err
	}
	if after := ObjMeta(a.Object).GetManagedFields(); !sameEntries(before, after) {
		if w := fieldmanager.KeepValid(a.Object, before); w != "" {
			a.Warnings = append(a.Warnings, w)
		}
	}
	return nil
}

func sameEntries(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Manager != y.Manager || x.Operation != y.Operation || x.APIVersion != y.APIVersion || x.FieldsType != y.FieldsType ||
			x.Subresource != y.Subresource || !x.Time.Equal(y.Time) || (x.FieldsV1 == nil) != (y.FieldsV1 == nil) ||
			x.FieldsV1 != nil && !bytes.Equal(x.FieldsV1.Raw, y.FieldsV1.Raw) {
			return false
		}
	}
	return true
}
