// Package crd compiles apiextensions.k8s.io/v1 CustomResourceDefinitions into what the API
// server needs to serve their custom resources: names and scope, a structural schema with
// upstream's pruning, defaulting, OpenAPI validation and CEL (x-kubernetes-validations)
// rules, the status and scale subresources, and additionalPrinterColumns. It does no I/O:
// the API server stores the objects and calls in here (see docs/crds.md for why the schema
// engine is k8s.io/apiextensions-apiserver's rather than our own).
package crd

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	schemavalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/registry/rest"
)

// GroupVersion and Resource of the CustomResourceDefinition API itself.
var (
	GroupVersion = apiextensionsv1.SchemeGroupVersion
	Resource     = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
)

// Version is one served version of a CRD, compiled. It is immutable and safe for
// concurrent use.
type Version struct {
	GVR        schema.GroupVersionResource
	Kind       string
	ListKind   string
	Singular   string
	ShortNames []string
	Categories []string
	Namespaced bool
	// StorageVersion is the version objects are stored in (apiVersion in etcd); with the
	// None conversion strategy only apiVersion differs between versions.
	StorageVersion string
	// StorageResource names the etcd prefix shared by every version: <group>/<plural>,
	// upstream's key layout (/registry/<group>/<plural>/...).
	StorageResource string
	// Status and Scale are the subresources the version has.
	Status bool
	Scale  *apiextensionsv1.CustomResourceSubresourceScale
	// CRDName and CRDUID identify the definition the version came from.
	CRDName string
	CRDUID  string

	structural *structuralschema.Structural
	// schemas holds every version's structural schema (served or not) by version name:
	// a stored object is normalized with the schema of the version it was stored in.
	schemas   map[string]*structuralschema.Structural
	validator schemavalidation.SchemaValidator
	cel       *cel.Validator // nil: no x-kubernetes-validations rules
	table     rest.TableConvertor
	def       *apiextensionsv1.CustomResourceDefinition
}

// Compile returns the served versions of a CRD (the definition must be valid, see
// ValidateDefinition).
func Compile(def *apiextensionsv1.CustomResourceDefinition) ([]*Version, error) {
	storage := ""
	for _, v := range def.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	if storage == "" {
		return nil, fmt.Errorf("customresourcedefinition %s: no version is the storage version", def.Name)
	}
	names := def.Spec.Names
	singular := names.Singular
	if singular == "" {
		singular = strings.ToLower(names.Kind)
	}
	listKind := names.ListKind
	if listKind == "" {
		listKind = names.Kind + "List"
	}
	schemas := map[string]*structuralschema.Structural{}
	for _, v := range def.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil) != nil {
			continue
		}
		if s, err := structuralschema.NewStructural(internal); err == nil {
			schemas[v.Name] = s
		}
	}
	own := def.DeepCopy()
	var out []*Version
	for i := range def.Spec.Versions {
		v := &def.Spec.Versions[i]
		if !v.Served {
			continue
		}
		cv := &Version{
			GVR:  schema.GroupVersionResource{Group: def.Spec.Group, Version: v.Name, Resource: names.Plural},
			Kind: names.Kind, ListKind: listKind, Singular: singular,
			ShortNames: names.ShortNames, Categories: names.Categories,
			Namespaced:      def.Spec.Scope == apiextensionsv1.NamespaceScoped,
			StorageVersion:  storage,
			StorageResource: def.Spec.Group + "/" + names.Plural,
			CRDName:         def.Name, CRDUID: string(def.UID),
			schemas: schemas, def: own,
		}
		if sr := v.Subresources; sr != nil {
			cv.Status = sr.Status != nil
			cv.Scale = sr.Scale
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("customresourcedefinition %s version %s: spec.versions[%d].schema.openAPIV3Schema is required", def.Name, v.Name, i)
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("customresourcedefinition %s version %s: convert schema: %w", def.Name, v.Name, err)
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			return nil, fmt.Errorf("customresourcedefinition %s version %s: schema is not structural: %w", def.Name, v.Name, err)
		}
		cv.structural = s
		if cv.validator, _, err = schemavalidation.NewSchemaValidator(internal); err != nil {
			return nil, fmt.Errorf("customresourcedefinition %s version %s: schema validator: %w", def.Name, v.Name, err)
		}
		cv.cel = cel.NewValidator(s, true, celconfig.PerCallLimit)
		cols := v.AdditionalPrinterColumns
		if len(cols) == 0 {
			// As upstream's CRD handler: without columns, NAME and AGE.
			cols = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}}
		}
		if cv.table, err = tableconvertor.New(cols); err != nil {
			return nil, fmt.Errorf("customresourcedefinition %s version %s: additionalPrinterColumns: %w", def.Name, v.Name, err)
		}
		out = append(out, cv)
	}
	return out, nil
}

// Definition is the CRD the version was compiled from (not to be modified): the field
// manager builds its schemas from it (core/apiserver/fieldmanager.CRDTypeConverter).
func (v *Version) Definition() *apiextensionsv1.CustomResourceDefinition { return v.def }

// GVK is the version's group, version and kind.
func (v *Version) GVK() schema.GroupVersionKind { return v.GVR.GroupVersion().WithKind(v.Kind) }

// New returns an empty object of the version.
func (v *Version) New() runtime.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v.GVK())
	return u
}

// NewList returns an empty list of the version.
func (v *Version) NewList() runtime.Object {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(v.GVR.GroupVersion().WithKind(v.ListKind))
	return l
}

// Decode prunes the fields the schema does not know (unless
// x-kubernetes-preserve-unknown-fields keeps them) and applies the schema's defaults, as
// upstream does when it decodes a custom resource. It returns the paths of the pruned
// fields, which fieldValidation=Strict refuses and Warn reports.
func (v *Version) Decode(u *unstructured.Unstructured) (unknown []string) {
	unknown = pruning.PruneWithOptions(u.Object, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	defaulting.Default(u.Object, v.structural)
	return unknown
}

// Validate checks an object against the version's schema: OpenAPI value validation
// (types, required, enum, pattern, minimum/maximum, ...), embedded object metadata and the
// CEL rules (with oldSelf bound to old on updates; old is nil on create). Errors name the
// field, as upstream's (spec.replicas: Invalid value: ...).
func (v *Version) Validate(ctx context.Context, u, old *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if old == nil {
		errs = schemavalidation.ValidateCustomResource(nil, u.Object, v.validator)
	} else {
		errs = schemavalidation.ValidateCustomResourceUpdate(nil, u.Object, old.Object, v.validator)
	}
	// Embedded resources only (isResourceRoot false, as upstream's strategy): the root's
	// metadata is validated with every kind's (validation.Validate), and validating it
	// again as an embedded resource converted it to ObjectMeta on every write, a third of
	// a custom create's validation time.
	errs = append(errs, objectmeta.Validate(ctx, nil, u.Object, v.structural, false)...)
	if v.cel != nil {
		var oldObj any
		if old != nil {
			oldObj = old.Object
		}
		celErrs, _ := v.cel.Validate(ctx, nil, v.structural, u.Object, oldObj, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// Table renders objects of the version with its additionalPrinterColumns (upstream's
// table convertor: NAME, the columns, jsonPath evaluated per object).
func (v *Version) Table(ctx context.Context, items []runtime.Object) (*metav1.Table, error) {
	list := &unstructured.UnstructuredList{}
	for _, it := range items {
		u, ok := it.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("%s: table of a %T", v.GVR.Resource, it)
		}
		list.Items = append(list.Items, *u)
	}
	t, err := v.table.ConvertToTable(ctx, list, nil)
	if err != nil {
		return nil, err
	}
	t.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}
	// The convertor's rows point at copies in list: point them at the callers' objects.
	for i := range t.Rows {
		if i < len(items) {
			t.Rows[i].Object = runtime.RawExtension{Object: items[i]}
		}
	}
	return t, nil
}

// Converted returns obj as an object of this version: under the None conversion strategy
// only apiVersion changes. obj itself (which may be shared by a watch cache) is never
// modified; it is returned as is when it already has the version.
func (v *Version) Converted(obj runtime.Object) runtime.Object {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetAPIVersion() == v.GVR.GroupVersion().String() {
		return obj
	}
	c := u.DeepCopy()
	c.SetAPIVersion(v.GVR.GroupVersion().String())
	return c
}

// ForRead does to an object read from storage what upstream's storage decoding does to
// a custom resource, in place: prunes unknown fields and nulls the schema does not allow,
// and applies defaults, with the schema of the version it was stored in (so a default
// or a field dropped from the schema since the object was written shows on reads, as
// upstream), then converts it to this version (None: apiVersion only) and prunes with
// this version's schema. An object that went through Decode with the current schema is
// unchanged but for apiVersion.
func (v *Version) ForRead(u *unstructured.Unstructured) {
	stored := v.StorageVersion
	if gv, err := schema.ParseGroupVersion(u.GetAPIVersion()); err == nil && gv.Group == v.GVR.Group && v.schemas[gv.Version] != nil {
		stored = gv.Version
	}
	if s := v.schemas[stored]; s != nil {
		pruning.PruneWithOptions(u.Object, s, true, structuralschema.UnknownFieldPathOptions{})
		defaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s)
		defaulting.Default(u.Object, s)
	}
	if stored != v.GVR.Version {
		u.SetAPIVersion(v.GVR.GroupVersion().String())
		pruning.PruneWithOptions(u.Object, v.structural, true, structuralschema.UnknownFieldPathOptions{})
	}
}

// ForStorage sets apiVersion to the storage version (in place).
func (v *Version) ForStorage(u *unstructured.Unstructured) {
	u.SetAPIVersion(schema.GroupVersion{Group: v.GVR.Group, Version: v.StorageVersion}.String())
}

// ---- the definition itself ----

// Default applies upstream's defaults to a CRD (conversion strategy None, ...).
func Default(def *apiextensionsv1.CustomResourceDefinition) {
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(def)
}

// ValidateDefinition checks a CRD as upstream does (names, scope, versions, exactly one
// storage version, structural schemas, defaults, CEL rules that compile, printer columns),
// old being the stored definition on update (nil on create).
func ValidateDefinition(ctx context.Context, def, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	in := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(def, in, nil); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	if old == nil {
		return crdvalidation.ValidateCustomResourceDefinition(ctx, in)
	}
	oin := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(old, oin, nil); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	return crdvalidation.ValidateCustomResourceDefinitionUpdate(ctx, in, oin)
}

// SetStatus fills what the CRD controllers upstream would: accepted names, the stored
// versions (with the current storage version added), and the NamesAccepted and
// Established conditions (helm and `kubectl wait --for condition=established` wait for
// them). Names are accepted at once: the server refuses a second CRD of the same
// group and plural at creation, since the object name is <plural>.<group>.
func SetStatus(def *apiextensionsv1.CustomResourceDefinition, now metav1.Time) {
	def.Status.AcceptedNames = def.Spec.Names
	if def.Status.AcceptedNames.ListKind == "" {
		def.Status.AcceptedNames.ListKind = def.Spec.Names.Kind + "List"
	}
	if def.Status.AcceptedNames.Singular == "" {
		def.Status.AcceptedNames.Singular = strings.ToLower(def.Spec.Names.Kind)
	}
	for _, v := range def.Spec.Versions {
		if v.Storage {
			found := false
			for _, s := range def.Status.StoredVersions {
				found = found || s == v.Name
			}
			if !found {
				def.Status.StoredVersions = append(def.Status.StoredVersions, v.Name)
			}
		}
	}
	setCondition(def, apiextensionsv1.NamesAccepted, "NoConflicts", "no conflicts found", now)
	setCondition(def, apiextensionsv1.Established, "InitialNamesAccepted", "the initial names have been accepted", now)
}

func setCondition(def *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType, reason, msg string, now metav1.Time) {
	for i := range def.Status.Conditions {
		if def.Status.Conditions[i].Type == t {
			if def.Status.Conditions[i].Status != apiextensionsv1.ConditionTrue {
				def.Status.Conditions[i] = apiextensionsv1.CustomResourceDefinitionCondition{Type: t, Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now}
			}
			return
		}
	}
	def.Status.Conditions = append(def.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: t, Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now})
}
