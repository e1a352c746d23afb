package admitwasm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// A request keeps the policy set it started with open across a swap: a policy the new
// config drops closes (instances and module) when that request ends, not before and not
// at some later garbage collection; a policy the new config keeps stays open.
func TestSwapClosesADroppedPolicyAfterItsLastRequest(t *testing.T) {
	ctx := context.Background()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	path := wasmbuild.WAT(t, "plugins/admitwasm/testdata/misbehave.wat")
	policy := func(name string) string {
		return fmt.Sprintf("  - name: %s\n    path: %s\n    %s\n", name, path, podRule)
	}
	both := "admission:\n  policies:\n" + policy("kept") + policy("dropped")
	o, err := admitwasm.New(ctx, admitwasm.Options{Host: h, Config: []byte(both)})
	if err != nil {
		t.Fatal(err)
	}
	first := admitwasm.PoliciesInForce(o)
	_, v, release := o.AcquirePlugins() // a request in flight
	if len(v) != 2 {
		t.Fatalf("%d validators, want 2", len(v))
	}
	if err := o.Reload([]byte("admission:\n  policies:\n" + policy("kept"))); err != nil {
		t.Fatal(err)
	}
	if closed, _ := admitwasm.PolicyClosed(first, "dropped"); closed {
		t.Fatal("the dropped policy closed under a request that started before the swap")
	}
	release()
	if closed, _ := admitwasm.PolicyClosed(first, "dropped"); !closed {
		t.Error("the dropped policy is open after the last request of its set ended")
	}
	if closed, _ := admitwasm.PolicyClosed(first, "kept"); closed {
		t.Error("the policy the new config kept was closed with the old set")
	}
	second := admitwasm.PoliciesInForce(o)
	if closed, ok := admitwasm.PolicyClosed(second, "kept"); !ok || closed {
		t.Errorf("the kept policy in force: closed %v, present %v", closed, ok)
	}
	// Closing the policies closes what is in force; a request after it runs none.
	o.Close(ctx)
	if closed, _ := admitwasm.PolicyClosed(second, "kept"); !closed {
		t.Error("the policy in force is open after Close")
	}
	m, v, release := o.AcquirePlugins()
	release()
	if len(m)+len(v) != 0 {
		t.Errorf("%d policies after Close, want none", len(m)+len(v))
	}
}
