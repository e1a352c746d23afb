// Package handlers serves the API's verbs on one resource, as k8s.io/apiserver's
// endpoints/handlers: Get, List, Watch, Create, Update, Patch, Delete and
// DeleteCollection each decode what the request carries (body, patch, query, delete
// options), call the resource's registry.Store and write the answer in the format the
// client asked for (JSON, YAML, protobuf, Table, PartialObjectMetadata, watch streams).
// Routing, authentication and authorization are the caller's (core/apiserver).
package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// RequestInfo is what authorization and admission need to know about a request.
type RequestInfo struct {
	ResourceRequest bool
	Verb            string // get list watch create update patch delete deletecollection
	Resource        *registry.Resource
	Namespace       string
	Name            string
	Subresource     string
}

// Request is one API call being served.
type Request struct {
	W               http.ResponseWriter
	Req             *http.Request
	Info            *RequestInfo
	User            admission.UserInfo
	Query           url.Values
	Format          OutputFormat
	DryRun          bool
	FieldValidation fieldValidation
	warnings        []string
}

// DecodeRequest reads and decodes the body as an object of res.
func DecodeRequest(rq *Request, res *registry.Resource) (runtime.Object, error) {
	obj := res.NewFunc()
	if err := decodeBody(rq, res, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// ForStore is what the store needs of rq for a create, update or delete.
func (rq *Request) ForStore() *registry.WriteRequest {
	return &registry.WriteRequest{Namespace: rq.Info.Namespace, Subresource: rq.Info.Subresource, User: rq.User, DryRun: rq.DryRun, Warn: rq.addWarnings,
		Manager: managerOf(rq)}
}

func (rq *Request) addWarnings(ws []string) {
	for _, w := range ws {
		rq.W.Header().Add("Warning", `299 - `+strconv.Quote(w))
	}
}
