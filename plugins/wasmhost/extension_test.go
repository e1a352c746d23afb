package wasmhost_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// echo is a kind defined outside the host, as every adapter defines its own.
var echo = &wasmhost.Kind{Name: "echo", Export: "wasmkube_echo", Codes: []int32{7}}

func secretFunc(c *wasmhost.Call, _ api.Module, s []uint64) { s[0] = uint64(c.Data.(int)) }

var echoExt = wasmhost.Extension{Name: "echo", Kinds: []*wasmhost.Kind{echo}, Funcs: []wasmhost.HostFunc{
	{Name: "secret", Results: []api.ValueType{wasmhost.I32}, Capability: "secret", Fn: secretFunc},
}}

// A kind, its host functions and its capabilities come from the adapter's Extension: a
// module that imports a function needing a capability loads only when it is granted, and
// its calls read the adapter's data.
func TestExtensionKindsAndCapabilities(t *testing.T) {
	ctx := context.Background()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{echoExt}})
	if err != nil {
		t.Fatal(err)
	}
	path := wasmbuild.WAT(t, "plugins/testdata/capability.wat")
	_, err = h.Load(ctx, wasmhost.LoadOptions{Name: "nosecret", Path: path})
	if err == nil || !strings.Contains(err.Error(), `imports wasmkube.secret, which needs capability "secret"`) {
		t.Fatalf("load without the grant: got %v, want a refusal naming the capability", err)
	}
	m, err := h.Load(ctx, wasmhost.LoadOptions{Name: "secret", Path: path, Capabilities: []string{"secret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if !m.Kinds().Has(echo) || len(m.Kinds()) != 1 {
		t.Fatalf("kinds %v, want [echo]", m.Kinds())
	}
	p, err := m.NewPool(ctx, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := &wasmhost.Call{Kind: echo, Data: 7}
	if err := p.Do(ctx, c); err != nil || c.Code != 7 {
		t.Fatalf("echo 7: code %d, err %v", c.Code, err)
	}
	c = &wasmhost.Call{Kind: echo, Data: 9}
	if err := p.Do(ctx, c); err == nil || !strings.Contains(err.Error(), "returned status code 9, not allowed for echo") {
		t.Fatalf("echo 9: got %v, want a garbage result", err)
	}
}

// Two adapters may share a host function value; two different functions under one name
// are refused when the host is built.
func TestExtensionsMayNotRedefineAFunction(t *testing.T) {
	shared := echoExt.Funcs[0]
	if _, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{echoExt, {Name: "again", Funcs: []wasmhost.HostFunc{shared}}}}); err != nil {
		t.Fatalf("the same function twice: %v", err)
	}
	other := shared
	other.Fn = func(*wasmhost.Call, api.Module, []uint64) {}
	_, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{echoExt, {Name: "other", Funcs: []wasmhost.HostFunc{other}}}})
	if err == nil || !strings.Contains(err.Error(), "extension other redefines host function secret") {
		t.Fatalf("got %v, want a redefinition error", err)
	}
}
