package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
	"github.com/wasmkube/wasmkube/sdk/go/internal/jsonscan"
)

// Operation is the operation of the API request under admission.
type Operation string

// The operations of admission.k8s.io/v1.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// CodeDenied is Validate's and Mutate's refusal (the same code 2 as CodeUnschedulable):
// the request is refused with the reason as the message.
const CodeDenied Code = 2

// Deny refuses the request under admission with msg, which the client reads as
// `admission policy <name> denied the request: <msg>` (403 Forbidden).
func Deny(msg string) Status { return Status{Code: CodeDenied, Reason: msg} }

// Denyf is Deny with a formatted message.
func Denyf(format string, a ...any) Status { return Deny(fmt.Sprintf(format, a...)) }

// DenyField refuses the request because of one field of the object: the reason is
// "<path>: <msg>", which the API server turns into 422 Invalid naming the field (docs/abi.md
// section 4.6). path is a field path as kubectl prints it: spec.containers[0].image.
func DenyField(path, msg string) Status { return Deny(path + ": " + msg) }

// FieldError is one field of the object that a policy refuses, and why.
type FieldError struct {
	// Path is the field as kubectl prints it: spec.containers[0].image.
	Path string
	// Msg says what is wrong and what is allowed instead.
	Msg string
}

// DenyFields refuses the request because of several fields: the reason holds one
// "<path>: <msg>" line per field (lines are separate reasons, as in docs/abi.md section
// 4.4). The API server answers with one 422 Invalid, a cause per field. No errors allow
// the request.
func DenyFields(errs ...FieldError) Status {
	if len(errs) == 0 {
		return OK()
	}
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Path)
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	return Deny(b.String())
}

// ErrNoObject is returned by Request.Object and Request.OldObject when the request has no
// such object: there is no new object on DELETE and CONNECT, no stored one on CREATE.
var ErrNoObject = errors.New("the admission request has no such object")

// Request is the API request under admission (docs/abi.md section 4.6). Its accessors ask the
// host on each use; the attributes and the labels and annotations need no JSON parsing, so a
// policy that reads only those never pays for the object's JSON.
type Request struct{}

func (Request) str(fill fillFunc) string {
	s, _ := readString(fill)
	return s
}

// Operation is CREATE, UPDATE, DELETE or CONNECT.
func (r Request) Operation() Operation {
	return Operation(r.str(func(b unsafe.Pointer, c int32) int32 { return abi.RequestOperation(b, c) }))
}

// Kind is the object's kind: Pod, Deployment, ... (its group and version are in JSON()).
func (r Request) Kind() string {
	return r.str(func(b unsafe.Pointer, c int32) int32 { return abi.RequestKind(b, c) })
}

// Resource is the resource, with its subresource after a slash: pods, pods/status.
func (r Request) Resource() string {
	return r.str(func(b unsafe.Pointer, c int32) int32 { return abi.RequestResource(b, c) })
}

// Name is the object's name; empty for a CREATE with generateName.
func (r Request) Name() string {
	return r.str(func(b unsafe.Pointer, c int32) int32 { return abi.RequestName(b, c) })
}

// Namespace is the request's namespace; empty for cluster-scoped objects.
func (r Request) Namespace() string {
	return r.str(func(b unsafe.Pointer, c int32) int32 { return abi.RequestNamespace(b, c) })
}

// User is the caller's user name.
func (r Request) User() string {
	return r.str(func(b unsafe.Pointer, c int32) int32 { return abi.RequestUser(b, c) })
}

// Groups are the caller's groups.
func (Request) Groups() []string {
	b, code := readVar(func(b unsafe.Pointer, c int32) int32 { return abi.RequestGroups(b, c) })
	if code <= 0 {
		return nil
	}
	return splitLines(string(b))
}

// ObjectLabel returns label key of the new object and whether it is set (false too when
// the request has no new object).
func (Request) ObjectLabel(key string) (string, bool) {
	kp, kl := strPtr(key)
	return readString(func(b unsafe.Pointer, c int32) int32 { return abi.ObjectLabel(kp, kl, b, c) })
}

// ObjectAnnotation returns annotation key of the new object and whether it is set.
func (Request) ObjectAnnotation(key string) (string, bool) {
	kp, kl := strPtr(key)
	return readString(func(b unsafe.Pointer, c int32) int32 { return abi.ObjectAnnotation(kp, kl, b, c) })
}

// OldObjectLabel returns label key of the stored object (UPDATE, DELETE) and whether it is set.
func (Request) OldObjectLabel(key string) (string, bool) {
	kp, kl := strPtr(key)
	return readString(func(b unsafe.Pointer, c int32) int32 { return abi.OldObjectLabel(kp, kl, b, c) })
}

// OldObjectAnnotation returns annotation key of the stored object and whether it is set.
func (Request) OldObjectAnnotation(key string) (string, bool) {
	kp, kl := strPtr(key)
	return readString(func(b unsafe.Pointer, c int32) int32 { return abi.OldObjectAnnotation(kp, kl, b, c) })
}

// PodImages lists the images of a pod's init, app and ephemeral containers, in that order
// (on DELETE: the stored pod's); nil when the object is not a Pod.
func (Request) PodImages() []string {
	b, code := readVar(func(b unsafe.Pointer, c int32) int32 { return abi.PodImages(b, c) })
	if code <= 0 {
		return nil
	}
	return splitLines(string(b))
}

// JSON is the whole admission.k8s.io/v1 AdmissionRequest (uid, kind, resource, userInfo,
// object, oldObject, dryRun, options, ...).
func (Request) JSON() []byte {
	b, _ := readBytes(func(b unsafe.Pointer, c int32) int32 { return abi.RequestJSON(b, c) })
	return b
}

// ObjectJSON is the new object as Kubernetes JSON; nil on DELETE and CONNECT.
func (Request) ObjectJSON() []byte {
	b, _ := readBytes(func(b unsafe.Pointer, c int32) int32 { return abi.ObjectJSON(b, c) })
	return b
}

// OldObjectJSON is the stored object as Kubernetes JSON; nil on CREATE.
func (Request) OldObjectJSON() []byte {
	b, _ := readBytes(func(b unsafe.Pointer, c int32) int32 { return abi.OldObjectJSON(b, c) })
	return b
}

// Object decodes the new object into v (a struct with the fields the policy needs, or a
// map). It returns ErrNoObject on DELETE and CONNECT. The JSON is decoded straight from
// the SDK's read buffer, without a copy.
func (Request) Object(v any) error {
	return decodeVar("object", v, func(b unsafe.Pointer, c int32) int32 { return abi.ObjectJSON(b, c) })
}

// OldObject decodes the stored object into v; ErrNoObject on CREATE.
func (Request) OldObject(v any) error {
	return decodeVar("old object", v, func(b unsafe.Pointer, c int32) int32 { return abi.OldObjectJSON(b, c) })
}

// ObjectField decodes one member of the new object into v, found by its path of keys
// ("spec"; "metadata", "generateName"), without decoding the rest: Go's encoding/json costs
// about 0.2 ms per KiB in a guest, and most of a pod's JSON is metadata (managedFields,
// annotations) that a policy about its spec does not need. A path that is absent leaves v
// unchanged, as a missing field does in Object. It returns ErrNoObject on DELETE and CONNECT.
func (Request) ObjectField(v any, path ...string) error {
	return decodeVar("object", v, func(b unsafe.Pointer, c int32) int32 { return abi.ObjectJSON(b, c) }, path...)
}

// OldObjectField is ObjectField for the stored object; ErrNoObject on CREATE.
func (Request) OldObjectField(v any, path ...string) error {
	return decodeVar("old object", v, func(b unsafe.Pointer, c int32) int32 { return abi.OldObjectJSON(b, c) }, path...)
}

func decodeVar(what string, v any, fill fillFunc, path ...string) error {
	b, code := readVar(fill)
	if code < 0 {
		return fmt.Errorf("%s: %w", what, ErrNoObject)
	}
	if len(path) > 0 {
		var ok bool
		if b, ok = jsonscan.Find(b, path...); !ok {
			return nil
		}
		what += " " + strings.Join(path, ".")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode the %s: %w", what, err)
	}
	return nil
}

// Warn adds a warning for the client (kubectl prints "Warning: <msg>"). The host keeps at
// most 16 per call, each cut to 1 KiB; warnings of a call that denies are kept.
func (Request) Warn(msg string) {
	if msg == "" {
		return
	}
	p, l := strPtr(msg)
	abi.Warning(p, l)
}

// Warnf is Warn with a formatted message.
func (r Request) Warnf(format string, a ...any) { r.Warn(fmt.Sprintf(format, a...)) }

// AuditAnnotation records key=value with the request in the API server's audit log, as
// <policy>/<key>. The key is at most 63 bytes, the value is cut to 1 KiB, at most 16 per call.
func (Request) AuditAnnotation(key, value string) {
	kp, kl := strPtr(key)
	vp, vl := strPtr(value)
	abi.AuditAnnotation(kp, kl, vp, vl)
}
