package admission

import (
	"context"
	"fmt"
	"testing"
)

// asker asks for a second mutating pass on its first call.
type asker struct{ log *[]string }

func (r asker) Admit(_ context.Context, a *Attributes) error {
	*r.log = append(*r.log, fmt.Sprintf("admit:asker(reinvocation=%v)", a.IsReinvocation()))
	a.RequestReinvocation()
	return nil
}

// TestChainReinvocation: a mutating plugin that asks for reinvocation gets the whole
// mutating phase run once more before validation, and only once even when it asks again.
func TestChainReinvocation(t *testing.T) {
	var log []string
	c, err := NewChain(recorder{name: "m1", log: &log}, asker{&log}, validator{"v", &log})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Admit(context.Background(), podAttrs(Create)); err != nil {
		t.Fatal(err)
	}
	want := "[admit:m1 admit:asker(reinvocation=false) admit:m1 admit:asker(reinvocation=true) validate:v]"
	if fmt.Sprint(log) != want {
		t.Fatalf("order: %v\nwant   %s", log, want)
	}
}
