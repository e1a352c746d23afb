package fieldmanager

import (
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extapply "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	coreapply "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// Scheme knows every built-in kind the field manager converts: client-go's types,
// apiextensions.k8s.io/v1 and wasmkube's policy.wasmkube.io/v1alpha1.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := policyv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// builtinTypes is the type converter of the built-in kinds: the structured-merge-diff
// schemas client-go generates for its apply configurations (with upstream's
// +listType/+listMapKey/+mapType markers), and apiextensions-apiserver's for
// CustomResourceDefinitions. Parsing them costs about 100 ms, so it happens once, on first
// use.
var builtinTypes = sync.OnceValue(func() managedfields.TypeConverter {
	return byGroup{core: coreapply.NewTypeConverter(Scheme), ext: extapply.NewTypeConverter(Scheme)}
})

// BuiltinTypeConverter returns the type converter of every built-in kind.
func BuiltinTypeConverter() managedfields.TypeConverter { return builtinTypes() }

// byGroup sends apiextensions.k8s.io objects to apiextensions-apiserver's schemas,
// wasmkube's own groups (policy.wasmkube.io) to a deduced converter, and the others to
// client-go's.
type byGroup struct{ core, ext managedfields.TypeConverter }

// ownGroups have no structured-merge-diff schema: their objects' fields are deduced from
// the object itself (lists atomic), as upstream does for a custom resource without one.
var ownGroups = map[string]managedfields.TypeConverter{policyv1alpha1.GroupName: managedfields.NewDeducedTypeConverter()}

func (c byGroup) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	g := obj.GetObjectKind().GroupVersionKind().Group
	if g == apiextensionsv1.GroupName {
		return c.ext.ObjectToTyped(obj, opts...)
	}
	if tc, ok := ownGroups[g]; ok {
		return tc.ObjectToTyped(obj, opts...)
	}
	return c.core.ObjectToTyped(obj, opts...)
}

func (c byGroup) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	return c.core.TypedToObject(v)
}

// CRDTypeConverter returns the type converter of a CRD's custom resources, built as
// upstream's apiextensions-apiserver builds it: each version's OpenAPI v3 document from
// its structural schema (apiextensions-apiserver's builder, which carries
// x-kubernetes-list-type, -list-map-keys and -map-type and the ObjectMeta definitions),
// turned into structured-merge-diff types by managedfields.NewTypeConverter.
func CRDTypeConverter(def *apiextensionsv1.CustomResourceDefinition) (managedfields.TypeConverter, error) {
	var models = map[string]*spec.Schema{}
	for _, v := range def.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		sp, err := builder.BuildOpenAPIV3(def, v.Name, builder.Options{})
		if err != nil {
			return nil, fmt.Errorf("schema of customresourcedefinition %s version %s: %w", def.Name, v.Name, err)
		}
		if sp.Components == nil {
			continue
		}
		for name, s := range sp.Components.Schemas {
			models[name] = s
		}
	}
	if len(models) == 0 {
		// No schema: every field atomic, as upstream's deduced converter.
		return managedfields.NewDeducedTypeConverter(), nil
	}
	tc, err := managedfields.NewTypeConverter(models, def.Spec.PreserveUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("schema of customresourcedefinition %s: %w", def.Name, err)
	}
	return tc, nil
}
