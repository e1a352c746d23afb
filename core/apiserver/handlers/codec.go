package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// MaxBodyBytes is the largest request body accepted (as upstream: 3 MiB).
const MaxBodyBytes = 3 << 20

// fieldValidation is the request's fieldValidation directive.
type fieldValidation int

const (
	fvWarn fieldValidation = iota // upstream's default
	fvStrict
	fvIgnore
)

func ParseFieldValidation(v string) (fieldValidation, error) {
	switch v {
	case "", "Warn":
		return fvWarn, nil
	case "Strict":
		return fvStrict, nil
	case "Ignore":
		return fvIgnore, nil
	}
	return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid fieldValidation directive %q: must be one of Strict, Warn, Ignore", v))
}

// protobufType is client-go's default request encoding for built-in types.
const protobufType = "application/vnd.kubernetes.protobuf"

var protoSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// decodeBody reads the request body (JSON, YAML or protobuf) into obj, an empty object
// of res. Strictness (fieldValidation) applies to JSON and YAML; protobuf cannot carry
// unknown or duplicate fields in the same way.
func decodeBody(rq *Request, res *registry.Resource, obj runtime.Object) error {
	body, err := ReadBody(rq.W, rq.Req)
	if err != nil {
		return err
	}
	ct := rq.Req.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt == protobufType {
		if len(body) == 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("the request body for %s is empty; send a %s", res.GVR.Resource, res.Kind))
		}
		_, gvk, err := protoSerializer.Decode(body, nil, obj)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", res.Kind, res.GVR.Version, res.Kind, err))
		}
		if gvk != nil && gvk.Kind != "" && gvk.Kind != res.Kind {
			return apierrors.NewBadRequest(fmt.Sprintf("the kind in the body (%s) does not match the expected kind %s of %s", gvk.Kind, res.Kind, res.GVR.Resource))
		}
		obj.GetObjectKind().SetGroupVersionKind(res.GVK())
		return nil
	}
	data, err := toJSON(ct, body, rq.FieldValidation)
	if err != nil {
		return err
	}
	ws, err := decodeInto(data, res, res.Kind, res.GVR.GroupVersion(), obj, rq.FieldValidation)
	if err != nil {
		return err
	}
	rq.addWarnings(ws)
	return nil
}

// BodyTimeoutError is a request body that did not arrive within the server's body read
// timeout (after): the HTTP guard's body reader returns it, readBody answers 408.
type BodyTimeoutError struct {
	After time.Duration
	Err   error
}

func (e *BodyTimeoutError) Error() string {
	return fmt.Sprintf("request body not received within %s: %v", e.After, e.Err)
}

func (e *BodyTimeoutError) Unwrap() error { return e.Err }

// ReadBody reads the request body up to maxBodyBytes; a larger body is 413.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the request body is larger than the limit of %d bytes (3 MiB)", MaxBodyBytes))
	}
	var te *BodyTimeoutError
	if errors.As(err, &te) {
		// The body read timeout (httpguard.go): 408, as net/http answers slow headers.
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusRequestTimeout,
			Reason: metav1.StatusReasonTimeout, Message: fmt.Sprintf("the request body was not received within %s", te.After)}}
	}
	if err != nil {
		return nil, apierrors.NewBadRequest("read request body: " + err.Error())
	}
	return body, nil
}

// toJSON converts a YAML body to JSON according to the Content-Type; JSON is returned
// unchanged.
func toJSON(contentType string, body []byte, fv fieldValidation) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "", "application/json", "*/*":
		return body, nil
	case "application/yaml", "application/x-yaml", "text/yaml":
		var (
			j   []byte
			err error
		)
		if fv == fvStrict {
			j, err = yaml.YAMLToJSONStrict(body)
		} else {
			j, err = yaml.YAMLToJSON(body)
		}
		if err != nil {
			return nil, apierrors.NewBadRequest("malformed YAML body: " + err.Error())
		}
		return j, nil
	}
	return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "", fmt.Sprintf("the body of the request was in an unknown format %q - accepted media types include: application/json, application/yaml", mt), 0, false)
}

// decodeInto decodes JSON data into obj, an empty object of res. Unknown and duplicate
// fields are an error under Strict and warnings under Warn. A kind or apiVersion that
// does not match the resource is 400.
func decodeInto(data []byte, res *registry.Resource, kind string, gv schema.GroupVersion, obj runtime.Object, fv fieldValidation) (warnings []string, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the request body for %s is empty; send a %s", res.GVR.Resource, kind))
	}
	var strictErrs []error
	if u, ok := obj.(*unstructured.Unstructured); ok {
		strictErrs, err = decodeUnstructured(data, u, fv) // customview.go
	} else if fv == fvIgnore {
		// Not UnmarshalStrict without options: that applies every strict check.
		err = kjson.UnmarshalCaseSensitivePreserveInts(data, obj)
	} else {
		strictErrs, err = kjson.UnmarshalStrict(data, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", kind, gv.Version, kind, err))
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		if fv == fvStrict {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s",
				kind, gv.Version, kind, strings.Join(msgs, ", ")))
		}
		warnings = msgs
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind != "" && gvk.Kind != kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the body (%s) does not match the expected kind %s of %s", gvk.Kind, kind, res.GVR.Resource))
	}
	if av := obj.GetObjectKind().GroupVersionKind().GroupVersion(); gvk.Version != "" && av != gv {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the apiVersion in the body (%s) does not match the expected apiVersion %s of %s", av.String(), gv.String(), res.GVR.Resource))
	}
	obj.GetObjectKind().SetGroupVersionKind(gv.WithKind(kind))
	// Custom objects are pruned and defaulted by their schema (customview.go).
	ws, err := customDecoded(res, obj, fv)
	if err != nil {
		return nil, err
	}
	return append(warnings, ws...), nil
}

// OutputFormat is what the client asked for in Accept.
type OutputFormat int

const (
	OutJSON OutputFormat = iota
	outYAML
	OutTable
	outPartial // PartialObjectMetadata(List)
	outProtobuf
)

// Negotiate picks the first media type in Accept the server can produce.
func Negotiate(accept string) (OutputFormat, error) {
	if accept == "" {
		return OutJSON, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json", "*/*", "application/*":
			switch params["as"] {
			case "":
				return OutJSON, nil
			case "Table":
				if params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
					return OutTable, nil
				}
			case "PartialObjectMetadata", "PartialObjectMetadataList":
				if params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
					return outPartial, nil
				}
			}
		case "application/yaml":
			if params["as"] == "" {
				return outYAML, nil
			}
		case protobufType:
			if params["as"] == "" {
				return outProtobuf, nil
			}
		}
	}
	return 0, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "",
		fmt.Sprintf("only the following media types are accepted: application/json, application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1 (asked for %q)", accept), 0, false)
}

// WriteJSON writes obj with code: JSON, or YAML or protobuf when asked for (protobuf
// only for API objects; anything else falls back to JSON).
func WriteJSON(w http.ResponseWriter, code int, obj any, format OutputFormat) {
	if ro, ok := obj.(runtime.Object); ok && format == outProtobuf {
		var buf bytes.Buffer
		if err := protoSerializer.Encode(ro, &buf); err == nil {
			w.Header().Set("Content-Type", protobufType)
			w.WriteHeader(code)
			_, _ = w.Write(buf.Bytes())
			return
		}
	}
	b, err := json.Marshal(obj)
	ct := "application/json"
	if err == nil && format == outYAML {
		b, err = yaml.JSONToYAML(b)
		ct = "application/yaml"
	}
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(apierrors.NewInternalError(err).Status())
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// WriteError writes err as a Kubernetes Status with its HTTP code.
func WriteError(w http.ResponseWriter, err error) int {
	st := toStatus(err)
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	WriteJSON(w, int(st.Code), st, OutJSON)
	return int(st.Code)
}

func toStatus(err error) metav1.Status {
	var as apierrors.APIStatus
	if errors.As(err, &as) {
		st := as.Status()
		if st.Code == 0 {
			st.Code = http.StatusInternalServerError
		}
		if st.Status == "" {
			st.Status = metav1.StatusFailure
		}
		return st
	}
	return apierrors.NewInternalError(err).Status()
}
