package apiserver

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The api-types packages (defaults, validation, printers, openapi) plug in here.

// defaultObject applies Kubernetes' defaults.
// TODO(apiserver): call defaults.Default(obj) once core/apiserver/defaults lands.
func defaultObject(obj runtime.Object) {}

// validateObject checks a new object.
// TODO(apiserver): call validation.Validate(obj) once defaults land (it needs them).
func validateObject(obj runtime.Object) field.ErrorList { return nil }

// validateObjectUpdate checks an update.
func validateObjectUpdate(obj, old runtime.Object) field.ErrorList { return nil }

// tableFor renders server-side tables.
// TODO(apiserver): printers.Table once core/apiserver/printers lands.
var tableFor tableConvertor = defaultTable

// openapiHandler serves /openapi/v2 and /openapi/v3.
// TODO(apiserver): openapi.Handler() once core/apiserver/openapi lands.
func openapiHandler() http.Handler { return nil }
