package crd

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
)

// OpenAPIV3 renders the OpenAPI v3 document of one group version from the CRDs that serve
// it, with upstream's builder: paths with the fieldValidation parameter (kubectl's
// --validate=strict then leaves validation to the server) and the schemas kubectl explain
// reads.
func OpenAPIV3(gv schema.GroupVersion, defs []*apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	var specs []*spec3.OpenAPI
	for _, def := range defs {
		if def.Spec.Group != gv.Group {
			continue
		}
		for _, v := range def.Spec.Versions {
			if v.Name != gv.Version || !v.Served {
				continue
			}
			sp, err := builder.BuildOpenAPIV3(def, v.Name, builder.Options{})
			if err != nil {
				return nil, fmt.Errorf("openapi of customresourcedefinition %s version %s: %w", def.Name, v.Name, err)
			}
			specs = append(specs, sp)
		}
	}
	if len(specs) == 0 {
		return nil, nil
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, fmt.Errorf("openapi of %s: %w", gv, err)
	}
	return json.Marshal(merged)
}
