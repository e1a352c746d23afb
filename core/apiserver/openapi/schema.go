package openapi

import (
	"reflect"
	"strings"

	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// specVersion selects the dialect the generator writes: Swagger 2.0 or OpenAPI 3.0.
type specVersion int

const (
	v2 specVersion = iota
	v3
)

// object is one JSON object of the generated document.
type object = map[string]any

// generator builds schemas for Go types by reflection, collecting one definition per named
// struct type, the way upstream's generated definitions are named (io.k8s.api.core.v1.Pod).
type generator struct {
	ver  specVersion
	defs map[string]object
	gvks map[reflect.Type][]schema.GroupVersionKind
}

func newGenerator(ver specVersion, gvks map[reflect.Type][]schema.GroupVersionKind) *generator {
	return &generator{ver: ver, defs: map[string]object{}, gvks: gvks}
}

// defName turns a Go package path and type name into upstream's definition name:
// k8s.io/api/core/v1.Pod -> io.k8s.api.core.v1.Pod.
func defName(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	domain := strings.Split(parts[0], ".")
	for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
		domain[i], domain[j] = domain[j], domain[i]
	}
	parts[0] = strings.Join(domain, ".")
	return strings.Join(parts, ".") + "." + t.Name()
}

func (g *generator) ref(name string) object {
	if g.ver == v3 {
		return object{"$ref": "#/components/schemas/" + name}
	}
	return object{"$ref": "#/definitions/" + name}
}

// intOrString is the schema of a value that is written either as a number or as a string.
func (g *generator) intOrString(format string) object {
	if g.ver == v3 {
		return object{"x-kubernetes-int-or-string": true, "anyOf": []any{object{"type": "integer"}, object{"type": "string"}}}
	}
	return object{"type": "string", "format": format}
}

// special types serialize differently from their Go structure (custom MarshalJSON).
func (g *generator) special(t reflect.Type) (object, bool) {
	switch t {
	case reflect.TypeOf(metav1.Time{}):
		return object{"type": "string", "format": "date-time", "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON. Wrappers are provided for many of the factory methods that the time package offers."}, true
	case reflect.TypeOf(metav1.MicroTime{}):
		return object{"type": "string", "format": "date-time", "description": "MicroTime is version of Time with microsecond level precision."}, true
	case reflect.TypeOf(metav1.Duration{}):
		return object{"type": "string", "description": "Duration is a wrapper around time.Duration which supports correct marshaling to YAML and JSON."}, true
	case reflect.TypeOf(apiresource.Quantity{}):
		s := g.intOrString("quantity")
		s["description"] = "Quantity is a fixed-point representation of a number, written as a number or a string with a suffix (128974848, 129e6, 129M, 123Mi, 100m, ...)."
		return s, true
	case reflect.TypeOf(intstr.IntOrString{}):
		s := g.intOrString("int-or-string")
		s["description"] = "IntOrString is a type that can hold an int32 or a string."
		return s, true
	case reflect.TypeOf(runtime.RawExtension{}):
		return object{"type": "object", "description": "RawExtension is used to hold extensions in external versions: a complete object with its own apiVersion and kind."}, true
	case reflect.TypeOf(metav1.FieldsV1{}):
		return object{"type": "object", "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format."}, true
	case reflect.TypeOf(metav1.Patch{}):
		return object{"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}, true
	}
	return nil, false
}

// typeSchema is the schema of a value of Go type t: inline for primitives, slices and maps,
// a reference to a definition for named structs.
func (g *generator) typeSchema(t reflect.Type) object {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := g.special(t); ok {
		name := defName(t)
		if _, done := g.defs[name]; !done {
			g.defs[name] = s
		}
		return g.ref(name)
	}
	switch t.Kind() {
	case reflect.Struct:
		name := defName(t)
		if _, done := g.defs[name]; !done {
			g.defs[name] = object{} // placeholder: stops recursion on self-referencing types
			g.defs[name] = g.structSchema(t)
		}
		return g.ref(name)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return object{"type": "string", "format": "byte"}
		}
		return object{"type": "array", "items": g.itemSchema(t.Elem())}
	case reflect.Map:
		return object{"type": "object", "additionalProperties": g.itemSchema(t.Elem())}
	case reflect.String:
		return object{"type": "string"}
	case reflect.Bool:
		return object{"type": "boolean"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return object{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return object{"type": "integer", "format": "int64"}
	case reflect.Float32:
		return object{"type": "number", "format": "float"}
	case reflect.Float64:
		return object{"type": "number", "format": "double"}
	}
	return object{"type": "object"}
}

// itemSchema is the schema of an array item or map value. OpenAPI 3 documents wrap references
// in allOf as upstream's do, with an empty default for struct values.
func (g *generator) itemSchema(t reflect.Type) object {
	s := g.typeSchema(t)
	if _, isRef := s["$ref"]; isRef && g.ver == v3 {
		w := object{"allOf": []any{s}}
		if t.Kind() == reflect.Struct {
			w["default"] = object{}
		}
		return w
	}
	return s
}

// fieldSchema is the schema of one struct field with its description and the strategic
// merge patch extensions taken from the field's tags.
func (g *generator) fieldSchema(f reflect.StructField, doc string) object {
	s := g.typeSchema(f.Type)
	if _, isRef := s["$ref"]; isRef && (g.ver == v3 || doc != "") {
		if g.ver == v3 {
			s = object{"allOf": []any{s}}
			if f.Type.Kind() == reflect.Struct {
				if _, special := g.special(f.Type); !special {
					s["default"] = object{}
				}
			}
		} else {
			s = object{"$ref": s["$ref"]}
		}
	}
	if doc != "" {
		s["description"] = doc
	}
	if v := f.Tag.Get("patchStrategy"); v != "" {
		s["x-kubernetes-patch-strategy"] = v
	}
	if v := f.Tag.Get("patchMergeKey"); v != "" {
		s["x-kubernetes-patch-merge-key"] = v
	}
	return s
}

type swaggerDocer interface{ SwaggerDoc() map[string]string }

func swaggerDoc(t reflect.Type) map[string]string {
	if d, ok := reflect.New(t).Elem().Interface().(swaggerDocer); ok {
		return d.SwaggerDoc()
	}
	if d, ok := reflect.New(t).Interface().(swaggerDocer); ok {
		return d.SwaggerDoc()
	}
	return nil
}

// structSchema builds the object schema of a struct: properties from json tags, inline
// (embedded) structs merged in, fields without omitempty listed as required.
func (g *generator) structSchema(t reflect.Type) object {
	props := object{}
	var required []string
	g.collectFields(t, props, &required)
	s := object{"type": "object", "properties": props}
	if doc := swaggerDoc(t)[""]; doc != "" {
		s["description"] = doc
	}
	if len(required) > 0 {
		s["required"] = required
	}
	if gvks := g.gvks[t]; len(gvks) > 0 {
		list := make([]any, len(gvks))
		for i, gvk := range gvks {
			list[i] = object{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
		}
		s["x-kubernetes-group-version-kind"] = list
	}
	return s
}

func (g *generator) collectFields(t reflect.Type, props object, required *[]string) {
	docs := swaggerDoc(t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := strings.Contains(","+opts+",", ",inline,") || (f.Anonymous && name == "")
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.collectFields(ft, props, required)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.fieldSchema(f, docs[name])
		// A pointer may be nil (serialized as null): upstream marks such fields +optional
		// even without omitempty (scheduling.k8s.io/v1beta1 PodGroupTemplate's
		// schedulingConstraints), and kubectl's client-side validation must not demand them.
		if !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,") && f.Type.Kind() != reflect.Pointer {
			*required = append(*required, name)
		}
	}
}
