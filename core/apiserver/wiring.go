package apiserver

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/core/apiserver/openapi"
	"github.com/wasmkube/wasmkube/core/apiserver/printers"
	"github.com/wasmkube/wasmkube/core/apiserver/validation"
)

// The api-types packages (defaults, validation, printers, openapi) plug in here.

// defaultObject applies Kubernetes' defaults.
func defaultObject(obj runtime.Object) { defaults.Default(obj) }

// validateObject checks a new object.
func validateObject(obj runtime.Object) field.ErrorList { return validation.Validate(obj) }

// validateObjectUpdate checks an update.
func validateObjectUpdate(obj, old runtime.Object) field.ErrorList {
	return validation.ValidateUpdate(obj, old)
}

// tableFor renders server-side tables.
var tableFor tableConvertor = printers.Table

// openapiHandler serves /openapi/v2 and /openapi/v3.
func openapiHandler() http.Handler { return openapi.Handler() }
