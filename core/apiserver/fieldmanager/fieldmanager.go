// Package fieldmanager keeps metadata.managedFields on every write and serves server-side
// apply (application/apply-patch+yaml) for every resource, built-in and custom, with
// upstream's field manager: k8s.io/apimachinery/pkg/util/managedfields over
// sigs.k8s.io/structured-merge-diff, which does the merging, the ownership and the
// conflicts; this package only chooses the schemas, the reset fields and the manager name,
// as k8s.io/apiserver's handlers do. It does no I/O: the API server's handlers hand it the
// decoded live object and the request and store what it returns (docs/apiserver.md,
// "Server-side apply and managedFields").
package fieldmanager

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"
)

// Resource describes one served resource (one version of one kind) to the field manager.
type Resource struct {
	// Kind is the served group, version and kind; managedFields entries name its
	// apiVersion.
	Kind schema.GroupVersionKind
	// Types converts objects to structured-merge-diff values; nil means
	// BuiltinTypeConverter (custom resources pass CRDTypeConverter's).
	Types managedfields.TypeConverter
	// Custom resources are *unstructured.Unstructured and versions differ only in
	// apiVersion (the None conversion strategy).
	Custom bool
	// Subresources besides the main resource whose writes keep entries of their own
	// ("status", "finalize", "ephemeralcontainers"; scale has NewScale).
	Subresources []string
	// ResetFields are, by subresource ("" for the main resource), the fields the
	// server's strategy resets on that write, so the writer never owns them (upstream's
	// GetResetFields). Nil: DefaultResetFields.
	ResetFields map[string]*fieldpath.Set
	// Convertor converts between the served version and the versions other entries were
	// written in; nil: the built-in scheme (one version per kind) or, for custom
	// resources, an apiVersion rewrite.
	Convertor runtime.ObjectConvertor
}

// DefaultResetFields are the reset fields of a resource whose main writes keep status
// (hasStatus) and whose status writes keep everything but status, as the API server's
// update strategy does: upstream's customResourceStrategy and statusStrategy.
func DefaultResetFields(hasStatus bool) map[string]*fieldpath.Set {
	out := map[string]*fieldpath.Set{}
	if hasStatus {
		out[""] = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
		out["status"] = fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec"))
	}
	return out
}

// Manager is the field manager of one resource, safe for concurrent use. Building one
// costs little once the schemas are parsed; the API server keeps one per resource.
type Manager struct {
	kind     schema.GroupVersionKind
	custom   bool
	creater  runtime.ObjectCreater
	managers map[string]*managedfields.FieldManager // by subresource, "" the main resource
	// fast are the managers of Update for built-in kinds, over the unvalidated converter
	// (unvalidated.go); nil for custom resources.
	fast map[string]*managedfields.FieldManager
}

// New builds the field manager of a resource.
func New(r Resource) (*Manager, error) {
	tc := r.Types
	if tc == nil {
		tc = BuiltinTypeConverter()
	}
	reset := r.ResetFields
	if reset == nil {
		reset = DefaultResetFields(false)
	}
	if !r.Custom && r.Convertor == nil && !Scheme.Recognizes(r.Kind) {
		// A kind of our own not added to Scheme: no field manager (writes keep their
		// entries as they were) rather than a failing create.
		return nil, fmt.Errorf("field manager of %v: the kind is not in fieldmanager.Scheme", r.Kind)
	}
	var conv runtime.ObjectConvertor
	var creater runtime.ObjectCreater
	if r.Custom {
		conv, creater = unstructuredConvertor{}, unstructuredCreater{}
	} else {
		conv, creater = runtime.UnsafeObjectConvertor(Scheme), Scheme
	}
	if r.Convertor != nil {
		conv = r.Convertor
	}
	m := &Manager{kind: r.Kind, custom: r.Custom, creater: creater, managers: map[string]*managedfields.FieldManager{}}
	var fastTypes *unvalidated
	if !r.Custom {
		fastTypes = &unvalidated{TypeConverter: tc}
		m.fast = map[string]*managedfields.FieldManager{}
	}
	for _, sub := range append([]string{""}, r.Subresources...) {
		var filter map[fieldpath.APIVersion]fieldpath.Filter
		if s := reset[sub]; s != nil {
			filter = fieldpath.NewExcludeFilterSetMap(map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(r.Kind.GroupVersion().String()): s})
		}
		var fm *managedfields.FieldManager
		var err error
		if r.Custom {
			fm, err = managedfields.NewDefaultCRDFieldManager(tc, conv, noDefaults{}, creater, r.Kind, r.Kind.GroupVersion(), sub, filter)
		} else {
			fm, err = managedfields.NewDefaultFieldManager(tc, conv, noDefaults{}, creater, r.Kind, r.Kind.GroupVersion(), sub, filter)
		}
		if err != nil {
			return nil, fmt.Errorf("field manager of %v: %w", r.Kind, err)
		}
		m.managers[sub] = fm
		if fastTypes != nil {
			if m.fast[sub], err = managedfields.NewDefaultFieldManager(fastTypes, conv, noDefaults{}, creater, r.Kind, r.Kind.GroupVersion(), sub, filter); err != nil {
				return nil, fmt.Errorf("field manager of %v: %w", r.Kind, err)
			}
		}
	}
	return m, nil
}

// New returns an empty object of the resource: the live object of a create.
func (m *Manager) New() runtime.Object {
	obj, err := m.creater.New(m.kind)
	if err != nil {
		panic(fmt.Sprintf("field manager of %v: %v", m.kind, err))
	}
	return obj
}

// Update records an Update operation by manager: obj, the object the request wants to
// store, gets managedFields from live's (or its own, when the request sets them, as
// upstream honours) plus the fields this write changed. live is an empty object on a
// create (Manager.New). Both objects belong to the caller and may be modified. As
// upstream's UpdateNoErrors, a failure keeps live's managedFields: ownership tracking
// never fails a write.
func (m *Manager) Update(live, obj runtime.Object, manager, subresource string) runtime.Object {
	fm, ok := m.managers[subresource]
	if !ok {
		// A write through a subresource that keeps no entries of its own (binding):
		// ownership is unchanged.
		setManaged(obj, managedOf(live))
		return obj
	}
	if fast := m.fast[subresource]; fast != nil {
		requested := managedOf(obj)
		if out, err := fast.Update(live, obj, manager); err == nil {
			return out
		}
		setManaged(obj, requested) // the failed Update removed them
	}
	return fm.UpdateNoErrors(live, obj, manager)
}

// Validation is the request's fieldValidation directive.
type Validation string

// The fieldValidation directives (metav1.FieldValidation*).
const (
	ValidationIgnore Validation = metav1.FieldValidationIgnore
	ValidationWarn   Validation = metav1.FieldValidationWarn
	ValidationStrict Validation = metav1.FieldValidationStrict
)

// ApplyOptions are a server-side apply request's parameters.
type ApplyOptions struct {
	Manager     string // the request's fieldManager (required)
	Force       bool   // force=true: take the conflicting fields
	Subresource string
	Validation  Validation
}

// Apply merges an apply configuration (the YAML or JSON body of an
// application/apply-patch+yaml request) into live and returns the object to store, with
// managedFields, and the warnings for the client (fieldValidation=Warn). live is an empty
// object (Manager.New) to create by apply. Conflicts are upstream's 409 with a cause per
// manager and field; bad input is a 400 naming the object and the field.
func (m *Manager) Apply(live runtime.Object, body []byte, opts ApplyOptions) (runtime.Object, []string, error) {
	fm, ok := m.managers[opts.Subresource]
	if !ok {
		return nil, nil, apierrors.NewMethodNotSupported(schema.GroupResource{Group: m.kind.Group, Resource: m.kind.Kind}, "apply to "+opts.Subresource)
	}
	patch, name, warnings, err := decodeApplyPatch(m.kind.Kind, live, body, opts.Validation)
	if err != nil {
		return nil, nil, err
	}
	out, err := fm.Apply(live, patch, opts.Manager, opts.Force)
	if err != nil {
		return nil, nil, applyError(m.kind.Kind, name, err)
	}
	if out == nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("apply patch of %s %s: the result is empty", m.kind.Kind, name))
	}
	return out, warnings, nil
}

// decodeApplyPatch decodes an apply body of kind as upstream's apply patcher: an object
// of that kind, duplicate fields refused (Strict) or warned about (Warn). name is the
// object's for messages.
func decodeApplyPatch(kind string, live runtime.Object, body []byte, validation Validation) (patch *unstructured.Unstructured, name string, warnings []string, err error) {
	patch = &unstructured.Unstructured{Object: map[string]any{}}
	if err := decodeApply(body, &patch.Object); err != nil {
		return nil, "", nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding apply patch of %s: %v", kind, err))
	}
	if len(patch.Object) == 0 {
		return nil, "", nil, apierrors.NewBadRequest(fmt.Sprintf("apply patch of %s: the body is empty; it must be an object with apiVersion and kind", kind))
	}
	name = objectName(live, patch)
	if k := patch.GetKind(); k != kind {
		return nil, "", nil, apierrors.NewBadRequest(fmt.Sprintf("apply patch of %s %s: kind %q does not match the resource's kind %q", kind, name, k, kind))
	}
	if validation == ValidationStrict || validation == ValidationWarn {
		if err := strictApply(body); err != nil {
			if validation == ValidationStrict {
				return nil, "", nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding apply patch of %s %s: %v", kind, name, err))
			}
			warnings = append(warnings, err.Error())
		}
	}
	return patch, name, warnings, nil
}

// applyError: an API status (a conflict's 409) as it is; anything else is the schema
// refusing the configuration (a field it does not declare, a value of the wrong type, a
// duplicate list key): the client's input, a 400.
func applyError(kind, name string, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewBadRequest(fmt.Sprintf("apply patch of %s %s: %v", kind, name, err))
}

func objectName(live, patch runtime.Object) string {
	for _, o := range []runtime.Object{patch, live} {
		if a, err := meta.Accessor(o); err == nil && a.GetName() != "" {
			if a.GetNamespace() != "" {
				return a.GetNamespace() + "/" + a.GetName()
			}
			return a.GetName()
		}
	}
	return "(unnamed)"
}

func managedOf(obj runtime.Object) []metav1.ManagedFieldsEntry {
	if a, err := meta.Accessor(obj); err == nil {
		return a.GetManagedFields()
	}
	return nil
}

func setManaged(obj runtime.Object, mf []metav1.ManagedFieldsEntry) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(mf)
	}
}

// KeepValid undoes a mutating admission plugin's change to managedFields that left them
// undecodable (upstream's ManagedFieldsValidatingAdmissionController): obj gets before
// back and the returned warning says so; a valid change stays.
func KeepValid(obj runtime.Object, before []metav1.ManagedFieldsEntry) (warning string) {
	after := managedOf(obj)
	if err := managedfields.ValidateManagedFields(after); err != nil {
		setManaged(obj, before)
		return fmt.Sprintf("an admission plugin set invalid managedFields (%v); they were reset to their value before admission", err)
	}
	return ""
}

// ManagerName is the manager of a write: the request's fieldManager, else the user
// agent's prefix before the first "/" with unprintable characters left out, at most 128
// bytes (upstream's managerOrUserAgent: "kubectl/v1.32.0 (linux/amd64)" -> "kubectl").
func ManagerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	prefix := strings.Split(userAgent, "/")[0]
	var buf bytes.Buffer
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}

// ValidatePatchOptions checks a PATCH's fieldManager and force as upstream does: apply
// requires a fieldManager, force is only for apply; a 422 on PatchOptions naming the
// field.
func ValidatePatchOptions(pt types.PatchType, fieldManager string, force *bool) error {
	opts := &metav1.PatchOptions{FieldManager: fieldManager, Force: force}
	if errs := metav1validation.ValidatePatchOptions(opts, pt); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	return nil
}

// IsApply reports whether a PATCH content type is server-side apply.
func IsApply(pt types.PatchType) bool {
	return pt == types.ApplyYAMLPatchType
}

// noDefaults: defaults are the admission chain's (Defaulting), which every applied object
// goes through after the merge.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// unstructuredConvertor converts custom objects between versions as the None conversion
// strategy does: only apiVersion changes (upstream's nopConverter).
type unstructuredConvertor struct{}

func (unstructuredConvertor) Convert(in, out, context any) error {
	return fmt.Errorf("unstructured conversion from %T to %T is not supported", in, out)
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom object expected, got %T", in)
	}
	kind := u.GroupVersionKind()
	target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{kind})
	if !ok {
		return nil, runtime.NewNotRegisteredErrForKind("custom resource", kind)
	}
	u.SetGroupVersionKind(target)
	return u, nil
}

func (unstructuredConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

type unstructuredCreater struct{}

func (unstructuredCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// isJSON reports whether an apply body is JSON (what kubectl and client-go send), which
// is decoded as JSON: the YAML decoder, which converts YAML to JSON first, took half the
// CPU of a re-apply of a 200 KB CRD.
func isJSON(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// decodeApply decodes an apply body into a map: JSON with integers kept as int64
// (upstream's unstructured JSON decoding), anything else as YAML (sigs.k8s.io/yaml, as
// upstream's apply patcher).
func decodeApply(body []byte, into *map[string]any) error {
	if isJSON(body) {
		return kjson.UnmarshalCaseSensitivePreserveInts(body, into)
	}
	return yaml.Unmarshal(body, into)
}

// strictApply reports duplicate fields in an apply body (fieldValidation Strict or Warn).
func strictApply(body []byte) error {
	if isJSON(body) {
		strict, err := kjson.UnmarshalStrict(body, &map[string]any{})
		if err != nil {
			return err
		}
		if len(strict) > 0 {
			return errors.Join(strict...)
		}
		return nil
	}
	return yaml.UnmarshalStrict(body, &map[string]any{})
}
