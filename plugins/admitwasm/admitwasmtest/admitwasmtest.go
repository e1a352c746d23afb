// Package admitwasmtest runs a wasm admission policy module on a request, as the API
// server does, for the tests of the example policies:
//
//	p := admitwasmtest.Load(t, "require-labels", wasmPath, `{"labels":["team"]}`)
//	r := p.Run(t, admitwasmtest.CreatePod(pod))
//	if r.Allowed { ... } // r.Message, r.Warnings, r.Object (the patched object)
package admitwasmtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// Policy is a loaded module with its args.
type Policy struct {
	Name string
	Pool *wasmhost.Pool
	// Reader and Capabilities serve get_object and list_objects (nil: nothing exists).
	Reader       admission.ObjectReader
	Capabilities []string
}

// Load compiles the module at path on a fresh host (its compilation cache in a test
// directory), makes a pool with args (JSON, "" for none; the guest's wasmkube_init sees
// them) and smoke-calls it as the API server's loader does. Any failure fails the test;
// use LoadErr to test a refusal.
func Load(t testing.TB, name, path, args string, caps ...string) *Policy {
	t.Helper()
	p, err := LoadErr(t, name, path, args, caps...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// LoadErr is Load returning the load error (bad args rejected by wasmkube_init, a
// module that fails its smoke call) instead of failing the test.
func LoadErr(t testing.TB, name, path, args string, caps ...string) (*Policy, error) {
	t.Helper()
	ctx := context.Background()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: t.TempDir()})
	if err != nil {
		return nil, err
	}
	o := wasmhost.LoadOptions{Name: name, Path: path, Timeout: admitwasm.DefaultTimeout}
	if len(caps) > 0 {
		o.Capabilities = []string{admitwasm.CapabilityObjects}
	}
	m, err := h.Load(ctx, o)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = m.Close(ctx) })
	var a []byte
	if args != "" {
		if !json.Valid([]byte(args)) {
			return nil, errors.New("admitwasmtest: args are not JSON: " + args)
		}
		a = []byte(args)
	}
	pool, err := m.NewPool(ctx, a, 2)
	if err != nil {
		return nil, err
	}
	if err := admitwasm.Smoke(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Policy{Name: name, Pool: pool, Capabilities: caps}, nil
}

// Result is what a policy made of one request.
type Result struct {
	// Allowed is false when the policy denied the request (Message is then its reason)
	// or failed (Err is then the *wasmhost.CallError).
	Allowed bool
	Message string
	Err     error
	// Warnings and AuditAnnotations of every call (kept when a call denies).
	Warnings         []string
	AuditAnnotations []admitwasm.Annotation
	// Object is the object after the policy's patch (the request's own object when it
	// set none; nil on DELETE); Patch is the JSON Patch it set.
	Object runtime.Object
	Patch  []byte
}

// Run runs the module's Mutate (if it exports one) and then its Validate on the
// mutated object, as the API server does for a policy that exports both. The request
// itself is not changed.
func (p *Policy) Run(t testing.TB, a *admission.Attributes) Result {
	t.Helper()
	ctx := context.Background()
	cp := *a
	if a.Object != nil {
		cp.Object = a.Object.DeepCopyObject()
	}
	res := Result{Allowed: true, Object: cp.Object}
	req := admitwasm.NewRequest(&cp)
	for _, k := range p.Pool.Module().Kinds().Intersect(admitwasm.Kinds) {
		c := &admitwasm.Call{Kind: k, Attributes: &cp, Reader: p.Reader, Capabilities: p.Capabilities}
		err := c.Do(ctx, p.Pool, req)
		res.Warnings = append(res.Warnings, c.Warnings...)
		res.AuditAnnotations = append(res.AuditAnnotations, c.AuditAnnotations...)
		if err != nil {
			res.Allowed, res.Err, res.Message = false, err, err.Error()
			return res
		}
		if c.Code == admitwasm.CodeDenied {
			res.Allowed, res.Message = false, c.Reason
			return res
		}
		if c.Patched != nil {
			res.Patch, res.Object = c.Patch, c.Patched
			cp.Object = c.Patched
			req = admitwasm.NewRequest(&cp)
		}
	}
	return res
}

// CreatePod is the CREATE of pod (its namespace defaults to "default") by user
// "alice" in group "system:authenticated".
func CreatePod(pod *v1.Pod) *admission.Attributes {
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	return &admission.Attributes{
		Operation: admission.Create, Kind: v1.SchemeGroupVersion.WithKind("Pod"), Resource: v1.SchemeGroupVersion.WithResource("pods"),
		Namespace: pod.Namespace, Name: pod.Name, Object: pod,
		User: admission.UserInfo{Name: "alice", Groups: []string{"system:authenticated"}},
	}
}

// UpdatePod is the UPDATE of old to pod.
func UpdatePod(pod, old *v1.Pod) *admission.Attributes {
	a := CreatePod(pod)
	a.Operation, a.OldObject = admission.Update, old
	return a
}

// DeletePod is the DELETE of the stored pod.
func DeletePod(pod *v1.Pod) *admission.Attributes {
	a := CreatePod(pod)
	a.Operation, a.Object, a.OldObject = admission.Delete, nil, pod
	return a
}
