package admitwasm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/tetratelabs/wazero/api"
	"github.com/tidwall/gjson"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/podfuncs"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// Status codes of the admission kinds (docs/abi.md section 4.6).
const (
	CodeAllowed       = wasmhost.CodeSuccess
	CodeError         = wasmhost.CodeError
	CodeDenied  int32 = 2
)

// The admission entry points.
var (
	Mutate   = &wasmhost.Kind{Name: "mutate", Export: "wasmkube_mutate", Codes: []int32{CodeDenied}}
	Validate = &wasmhost.Kind{Name: "validate", Export: "wasmkube_validate", Codes: []int32{CodeDenied}}
)

func init() {
	// Set here: checkPatch refers to the kind itself.
	Mutate.Check = checkPatch
}

// Kinds are the admission entry points, in the order a request runs them.
var Kinds = wasmhost.Kinds{Mutate, Validate}

// CapabilityObjects is the wasmhost capability of get_object and list_objects. The
// loader grants it to a policy whose config lists resources under `capabilities:`; which
// resources it may read is checked on every read.
const CapabilityObjects = "objects"

// DefaultTimeout is the time limit of an admission call unless the policy's config
// sets one (docs/abi.md section 6): upstream's webhook default (timeoutSeconds 10), so
// that a loaded machine does not turn valid requests into refusals (docs/plugins.md,
// "Time limits under CPU contention").
const DefaultTimeout = 10 * time.Second

// Limits of docs/abi.md section 6.
const (
	maxWarnings   = 16
	maxAnnotation = 16
	maxText       = 1 << 10
	maxAnnKey     = 63
	maxPatch      = 1 << 20
)

// Forbidden is the FORBIDDEN result of docs/abi.md section 2.
var Forbidden = wasmhost.Neg(-3)

// Extension is the admission part of the host: the two kinds and the pod, request,
// object, result and context-aware functions of docs/abi.md sections 4.1 and 4.6.
var Extension = wasmhost.Extension{Name: "admission", Kinds: Kinds,
	Funcs: append(append([]wasmhost.HostFunc(nil), podfuncs.Funcs...), hostFuncs...)}

// Annotation is one audit annotation set with audit_annotation.
type Annotation struct{ Key, Value string }

// Call is one admission entry-point call: the request the guest may read and what it
// returned. A Call is used by one goroutine; reuse it only after Do returned.
type Call struct {
	Kind *wasmhost.Kind
	// Attributes is the request under admission. The call does not change it: a
	// Mutate's result is in Patched.
	Attributes *admission.Attributes
	// Reader serves get_object and list_objects (nil: every read is NOT_FOUND), and
	// Capabilities are the resources the policy may read through it.
	Reader       admission.ObjectReader
	Capabilities []string
	// Wait, when set, bounds the time Do waits for an idle instance (wasmhost.Call.Wait).
	Wait time.Duration

	// Outputs.

	// Code is the status code the entry point returned; Reason the status_reason.
	Code   int32
	Reason string
	// Warnings are the call's warning texts (kept when it denies).
	Warnings []string
	// OversizedWarnings are the lengths of the warnings cut to the 1 KiB cap, and
	// DroppedWarnings the number given beyond the 16th (for the plugin kit to report).
	OversizedWarnings []int
	DroppedWarnings   int
	// AuditAnnotations are the call's audit_annotation pairs (kept when it denies).
	AuditAnnotations []Annotation
	// Patch is the JSON Patch of an allowing Mutate (nil: none), and Patched the object
	// after it, checked (nil when there is no patch).
	Patch   []byte
	Patched runtime.Object

	req *Request
	hc  wasmhost.Call
}

// Do runs the call on an idle instance of p; see wasmhost.Pool.Do. The Request's
// serialized forms are shared by every call made with the same Request.
func (c *Call) Do(ctx context.Context, p *wasmhost.Pool, req *Request) error {
	c.Code, c.Reason, c.Warnings, c.AuditAnnotations, c.Patch, c.Patched = 0, "", nil, nil, nil, nil
	c.OversizedWarnings, c.DroppedWarnings = nil, 0
	c.req = req
	if req == nil || req.a != c.Attributes {
		c.req = NewRequest(c.Attributes)
	}
	c.hc = wasmhost.Call{Kind: c.Kind, Data: c, Wait: c.Wait}
	err := p.Do(ctx, &c.hc)
	c.Code, c.Reason = c.hc.Code, c.hc.Reason
	c.hc.Data = nil
	if err != nil || c.Code != CodeAllowed {
		c.Patch, c.Patched = nil, nil // a denied or failed call's patch is dropped
	}
	return err
}

// WasmPod implements podfuncs.Source: the new pod, or the stored one on DELETE.
func (c *Call) WasmPod() *v1.Pod { return c.req.pod() }

// Request holds one admission request's serialized forms (the AdmissionRequest, the new
// and old objects as JSON), made on first use and shared by the policies the request
// runs through. Forget drops what a mutation made stale.
type Request struct {
	a       *admission.Attributes
	uid     types.UID
	reqJSON []byte
	objJSON []byte
	oldJSON []byte
	podCopy *v1.Pod
	objMeta metav1.Object
	oldMeta metav1.Object
	// gets and oldGets memoize object_get and old_object_get answers by path: a guest
	// asks each path twice (the length query, then the read), and the policies of one
	// request ask many of the same paths.
	gets, oldGets map[string]gjson.Result
}

// NewRequest returns the serialized forms of a, made lazily.
func NewRequest(a *admission.Attributes) *Request { return &Request{a: a} }

// Forget drops the forms of the new object (after a mutation changed it).
func (r *Request) Forget() {
	r.reqJSON, r.objJSON, r.podCopy, r.objMeta, r.gets = nil, nil, nil, nil, nil
}

// UID is the request's uid in the AdmissionRequest.
func (r *Request) UID() types.UID {
	if r.uid == "" {
		r.uid = types.UID(uuid.NewString())
	}
	return r.uid
}

// objectJSON marshals obj with its apiVersion and kind, which typed objects in the API
// server do not carry (an empty TypeMeta marshals as nothing): adding the two keys is
// cheaper than copying the object to set them.
func objectJSON(obj runtime.Object, apiVersion, kind string) []byte {
	b, err := json.Marshal(obj)
	if err != nil {
		panic("admitwasm: marshal API object: " + err.Error())
	}
	if bytes.HasPrefix(b, []byte(`{"kind":`)) || len(b) < 2 {
		return b
	}
	head := fmt.Sprintf(`{"kind":%q,"apiVersion":%q`, kind, apiVersion)
	if len(b) > 2 {
		head += ","
	}
	return append([]byte(head), b[1:]...)
}

func (r *Request) object() []byte {
	if r.a.Object == nil {
		return nil
	}
	if r.objJSON == nil {
		r.objJSON = objectJSON(r.a.Object, r.a.Kind.GroupVersion().String(), r.a.Kind.Kind)
	}
	return r.objJSON
}

func (r *Request) oldObject() []byte {
	if r.a.OldObject == nil {
		return nil
	}
	if r.oldJSON == nil {
		r.oldJSON = objectJSON(r.a.OldObject, r.a.Kind.GroupVersion().String(), r.a.Kind.Kind)
	}
	return r.oldJSON
}

func metaOf(obj runtime.Object) metav1.Object {
	if obj == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}

func (r *Request) newMeta() metav1.Object {
	if r.objMeta == nil {
		r.objMeta = metaOf(r.a.Object)
	}
	return r.objMeta
}

func (r *Request) storedMeta() metav1.Object {
	if r.oldMeta == nil {
		r.oldMeta = metaOf(r.a.OldObject)
	}
	return r.oldMeta
}

// pod is the request's pod for the pod functions: the new pod, or on DELETE the stored
// one. The new pod's resourceVersion is the stored one's (an update has not been written
// yet), so the host's JSON cache, keyed by uid and resourceVersion, must not see it: it
// gets a copy without one.
func (r *Request) pod() *v1.Pod {
	if p, ok := r.a.Object.(*v1.Pod); ok {
		if r.podCopy == nil {
			cp := *p
			cp.ResourceVersion = ""
			r.podCopy = &cp
		}
		return r.podCopy
	}
	if r.a.Object == nil {
		if p, ok := r.a.OldObject.(*v1.Pod); ok {
			return p
		}
	}
	return nil
}

// request is the AdmissionRequest of docs/abi.md section 4.6.
func (r *Request) request() []byte {
	if r.reqJSON != nil {
		return r.reqJSON
	}
	a := r.a
	gvk := metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind}
	gvr := metav1.GroupVersionResource{Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource}
	dry := a.DryRun
	ar := admissionv1.AdmissionRequest{
		UID: r.UID(), Kind: gvk, Resource: gvr, SubResource: a.Subresource,
		RequestKind: &gvk, RequestResource: &gvr, RequestSubResource: a.Subresource,
		Name: a.Name, Namespace: a.Namespace, Operation: admissionv1.Operation(a.Operation),
		UserInfo: authenticationv1.UserInfo{Username: a.User.Name, Groups: a.User.Groups},
		DryRun:   &dry,
	}
	if o := r.object(); o != nil {
		ar.Object.Raw = o
	}
	if o := r.oldObject(); o != nil {
		ar.OldObject.Raw = o
	}
	opts := map[admission.Operation]string{admission.Create: "CreateOptions", admission.Update: "UpdateOptions", admission.Delete: "DeleteOptions"}[a.Operation]
	if opts != "" {
		o := fmt.Sprintf(`{"kind":%q,"apiVersion":"meta.k8s.io/v1"`, opts)
		if dry {
			o += `,"dryRun":["All"]`
		}
		ar.Options.Raw = []byte(o + "}")
	}
	r.reqJSON = wasmhost.MustJSON(&ar)
	return r.reqJSON
}

func callOf(c *wasmhost.Call) *Call {
	ac, _ := c.Data.(*Call)
	return ac
}

var (
	buf  = []api.ValueType{wasmhost.I32, wasmhost.I32}
	kbuf = []api.ValueType{wasmhost.I32, wasmhost.I32, wasmhost.I32, wasmhost.I32}
	ret  = []api.ValueType{wasmhost.I32}
)

// str is a (buf, cap) -> i32 function answering a string of the request; outside an
// admission call (the host's own calls) it answers UNAVAILABLE.
func str(name string, val func(c *Call) string) wasmhost.HostFunc {
	return wasmhost.HostFunc{Name: name, Params: buf, Results: ret, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := callOf(hc)
		if c == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, name, s[0], s[1], val(c))
	}}
}

// bytesFn is like str for values that may be absent (UNAVAILABLE when nil).
func bytesFn(name string, val func(c *Call) []byte) wasmhost.HostFunc {
	return wasmhost.HostFunc{Name: name, Params: buf, Results: ret, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := callOf(hc)
		var v []byte
		if c != nil {
			v = val(c)
		}
		if v == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, name, s[0], s[1], v)
	}}
}

// maxPath is the longest path object_get takes.
const maxPath = 4 << 10

// get is a (path_p, path_l, buf, cap) -> i32 function answering one value of the new or
// stored object's JSON by gjson path, evaluated natively (docs/abi.md 4.6): -1 when the
// path is not there, -2 when the request has no such object.
//
// The typed object is walked first (typedGet), so that only the part of it the path
// names is marshalled; the whole document is the fallback.
func get(name string, object func(c *Call) runtime.Object, doc func(c *Call) []byte, memo func(r *Request) *map[string]gjson.Result) wasmhost.HostFunc {
	return wasmhost.HostFunc{Name: name, Params: kbuf, Results: ret, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		if uint32(s[1]) > maxPath {
			panic(wasmhost.Garbage(fmt.Sprintf("%s: a path of %d bytes; the limit is %d", name, uint32(s[1]), maxPath)))
		}
		path := string(wasmhost.Mem(mod, name, s[0], s[1]))
		c := callOf(hc)
		if c == nil || object(c) == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		m := memo(c.req)
		r, ok := (*m)[path]
		if !ok {
			if r, ok = typedGet(object(c), path); !ok {
				r = gjson.GetBytes(doc(c), path)
			}
			if *m == nil {
				*m = map[string]gjson.Result{}
			}
			(*m)[path] = r
		}
		if !r.Exists() {
			s[0] = wasmhost.NotFound
			return
		}
		s[0] = wasmhost.WriteVar(mod, name, s[2], s[3], r.Raw)
	}}
}

// lookup is a (key_p, key_l, buf, cap) -> i32 function reading a label or annotation of
// the new or stored object.
func lookup(name string, m func(c *Call) (map[string]string, bool)) wasmhost.HostFunc {
	return wasmhost.HostFunc{Name: name, Params: kbuf, Results: ret, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := callOf(hc)
		if c == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		vals, ok := m(c)
		if !ok {
			wasmhost.Mem(mod, name, s[0], s[1]) // a bad key pointer is still a bad pointer
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.Lookup(mod, name, vals, s[0], s[1], s[2], s[3])
	}}
}

func labelsOf(m metav1.Object, annotations bool) (map[string]string, bool) {
	if m == nil || reflect.ValueOf(m).IsNil() {
		return nil, false
	}
	if annotations {
		return m.GetAnnotations(), true
	}
	return m.GetLabels(), true
}

func podImages(p *v1.Pod) string {
	var sb strings.Builder
	for _, c := range p.Spec.InitContainers {
		sb.WriteString(c.Image)
		sb.WriteByte('\n')
	}
	for _, c := range p.Spec.Containers {
		sb.WriteString(c.Image)
		sb.WriteByte('\n')
	}
	for _, c := range p.Spec.EphemeralContainers {
		sb.WriteString(c.Image)
		sb.WriteByte('\n')
	}
	return sb.String()
}

var hostFuncs = []wasmhost.HostFunc{
	bytesFn("request_json", func(c *Call) []byte { return c.req.request() }),
	str("request_operation", func(c *Call) string { return string(c.Attributes.Operation) }),
	str("request_kind", func(c *Call) string { return c.Attributes.Kind.Kind }),
	str("request_resource", func(c *Call) string {
		if c.Attributes.Subresource != "" {
			return c.Attributes.Resource.Resource + "/" + c.Attributes.Subresource
		}
		return c.Attributes.Resource.Resource
	}),
	str("request_name", func(c *Call) string { return c.Attributes.Name }),
	str("request_namespace", func(c *Call) string { return c.Attributes.Namespace }),
	str("request_user", func(c *Call) string { return c.Attributes.User.Name }),
	str("request_groups", func(c *Call) string {
		var sb strings.Builder
		for _, g := range c.Attributes.User.Groups {
			sb.WriteString(g)
			sb.WriteByte('\n')
		}
		return sb.String()
	}),
	bytesFn("object_json", func(c *Call) []byte { return c.req.object() }),
	bytesFn("old_object_json", func(c *Call) []byte { return c.req.oldObject() }),
	get("object_get", func(c *Call) runtime.Object { return c.req.a.Object }, func(c *Call) []byte { return c.req.object() },
		func(r *Request) *map[string]gjson.Result { return &r.gets }),
	get("old_object_get", func(c *Call) runtime.Object { return c.req.a.OldObject }, func(c *Call) []byte { return c.req.oldObject() },
		func(r *Request) *map[string]gjson.Result { return &r.oldGets }),
	lookup("object_label", func(c *Call) (map[string]string, bool) { return labelsOf(c.req.newMeta(), false) }),
	lookup("object_annotation", func(c *Call) (map[string]string, bool) { return labelsOf(c.req.newMeta(), true) }),
	lookup("old_object_label", func(c *Call) (map[string]string, bool) { return labelsOf(c.req.storedMeta(), false) }),
	lookup("old_object_annotation", func(c *Call) (map[string]string, bool) { return labelsOf(c.req.storedMeta(), true) }),
	bytesFn("pod_images", func(c *Call) []byte {
		p := c.req.pod()
		if p == nil {
			return nil
		}
		return []byte(podImages(p))
	}),
	{Name: "warning", Params: buf, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		msg := wasmhost.Mem(mod, "warning", s[0], s[1])
		c := callOf(hc)
		if c == nil {
			return
		}
		if len(c.Warnings) >= maxWarnings {
			c.DroppedWarnings++
			return
		}
		if len(msg) > maxText {
			c.OversizedWarnings = append(c.OversizedWarnings, len(msg))
		}
		c.Warnings = append(c.Warnings, wasmhost.Truncate(msg, maxText))
	}},
	{Name: "audit_annotation", Params: kbuf, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		key := wasmhost.Mem(mod, "audit_annotation", s[0], s[1])
		val := wasmhost.Mem(mod, "audit_annotation", s[2], s[3])
		c := callOf(hc)
		if c == nil {
			return
		}
		if len(key) == 0 || len(key) > maxAnnKey {
			hc.SetGarbage(fmt.Sprintf("audit_annotation key of %d bytes: must be 1 to %d bytes", len(key), maxAnnKey))
			return
		}
		if len(c.AuditAnnotations) >= maxAnnotation {
			return
		}
		c.AuditAnnotations = append(c.AuditAnnotations, Annotation{Key: string(key), Value: wasmhost.Truncate(val, maxText)})
	}},
	{Name: "set_patch", Params: buf, Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := callOf(hc)
		if c == nil || c.Kind != Mutate {
			wasmhost.Mem(mod, "set_patch", s[0], s[1])
			hc.SetGarbage("set_patch called outside wasmkube_mutate")
			return
		}
		if uint32(s[1]) > maxPatch {
			panic(wasmhost.Garbage(fmt.Sprintf("set_patch of %d bytes: the limit is %d", uint32(s[1]), maxPatch)))
		}
		c.Patch = bytes.Clone(wasmhost.Mem(mod, "set_patch", s[0], s[1]))
	}},
	{Name: "get_object", Params: []api.ValueType{wasmhost.I32, wasmhost.I32, wasmhost.I32, wasmhost.I32, wasmhost.I32, wasmhost.I32}, Results: ret,
		Capability: CapabilityObjects, Fn: getObject},
	{Name: "list_objects", Params: kbuf, Results: ret, Capability: CapabilityObjects, Fn: listObjects},
}

// readable reports whether the call may read res, and in which namespace.
func (c *Call) readable(res string) bool {
	return c != nil && slices.Contains(c.Capabilities, res)
}

func getObject(hc *wasmhost.Call, mod api.Module, s []uint64) {
	res := string(wasmhost.Mem(mod, "get_object", s[0], s[1]))
	name := string(wasmhost.Mem(mod, "get_object", s[2], s[3]))
	c := callOf(hc)
	if !c.readable(res) {
		s[0] = Forbidden
		return
	}
	if c.Reader == nil {
		s[0] = wasmhost.NotFound
		return
	}
	obj, err := c.Reader.Get(hc.Context(), res, c.Attributes.Namespace, name)
	if err != nil || obj == nil {
		s[0] = wasmhost.NotFound
		return
	}
	s[0] = wasmhost.WriteVar(mod, "get_object", s[4], s[5], storedJSON(hc, c, res, obj))
}

func listObjects(hc *wasmhost.Call, mod api.Module, s []uint64) {
	res := string(wasmhost.Mem(mod, "list_objects", s[0], s[1]))
	c := callOf(hc)
	if !c.readable(res) {
		s[0] = Forbidden
		return
	}
	var items []runtime.Object
	if c.Reader != nil {
		// A namespaced resource is read in the request's namespace only: a request for a
		// cluster-scoped object sees none of its objects.
		if _, namespaced, _ := c.Reader.Resource(res); !namespaced || c.Attributes.Namespace != "" {
			items, _ = c.Reader.List(hc.Context(), res, c.Attributes.Namespace)
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i, o := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(storedJSON(hc, c, res, o))
	}
	b.WriteString("]}")
	s[0] = wasmhost.WriteVar(mod, "list_objects", s[2], s[3], b.Bytes())
}

// storedJSON is a stored object's JSON, from the host's cache (a stored object's uid and
// resourceVersion name its content).
func storedJSON(hc *wasmhost.Call, c *Call, res string, obj runtime.Object) []byte {
	gvk, _, _ := c.Reader.Resource(res)
	marshal := func() []byte { return objectJSON(obj, gvk.GroupVersion().String(), gvk.Kind) }
	om, ok := metaOf(obj).(*metav1.ObjectMeta)
	if !ok {
		return marshal()
	}
	return hc.Objects().Get(om, marshal)
}
