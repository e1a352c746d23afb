package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/explorer"
)

// TestFillBefore: each patch's old values are read from the object as the policies
// before it left it: a value a first policy added is the second's old value, a Monitor
// policy's patch (not applied) is not replayed, a path never set is null, and a decision
// without a patch gets none.
func TestFillBefore(t *testing.T) {
	doc := []byte(`{"metadata":{"name":"web","labels":{"app":"web","a/b":"x"}},"spec":{"containers":[{"name":"c","image":"nginx:1"}]}}`)
	ps := []explorerv1.PolicyDecision{
		{Name: "add-team", Verdict: explorerv1.PolicyMutated, Patch: json.RawMessage(`[{"op":"add","path":"/metadata/labels/team","value":"web"},{"op":"replace","path":"/spec/containers/0/image","value":"nginx:2"}]`)},
		{Name: "validate", Verdict: explorerv1.PolicyAllowed},
		{Name: "monitor", Mode: "Monitor", Verdict: explorerv1.PolicyMutated, Patch: json.RawMessage(`[{"op":"replace","path":"/metadata/labels/team","value":"ignored"}]`)},
		{Name: "retag", Verdict: explorerv1.PolicyMutated, Patch: json.RawMessage(`[{"op":"replace","path":"/metadata/labels/team","value":"db"},{"op":"remove","path":"/metadata/labels/a~1b"},{"op":"move","from":"/metadata/labels/app","path":"/metadata/labels/application"}]`)},
	}
	fillBefore(doc, ps)
	str := func(bs []json.RawMessage) string {
		var out []string
		for _, b := range bs {
			out = append(out, string(b))
		}
		return strings.Join(out, " ")
	}
	for i, want := range []string{`null "nginx:1"`, ``, `"web"`, `"web" "x" "web"`} {
		if got := str(ps[i].Before); got != want {
			t.Errorf("%s: before %q, want %q", ps[i].Name, got, want)
		}
	}
}

func TestPointerGet(t *testing.T) {
	var doc any
	_ = json.Unmarshal([]byte(`{"a":{"b/c":[1,{"d~e":true}]}}`), &doc)
	for p, want := range map[string]string{"/a/b~1c/0": "1", "/a/b~1c/1/d~0e": "true", "/a/b~1c/2": "", "/x": "", "": `{"a":{"b/c":[1,{"d~e":true}]}}`} {
		v, ok := pointerGet(doc, p)
		got := ""
		if ok {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if got != want {
			t.Errorf("%q: %q, want %q", p, got, want)
		}
	}
}

// reporter reports a decision in its phase.
type reporter struct{ name, phase string }

func (r reporter) Admit(_ context.Context, a *Attributes) error {
	a.RecordDecision(explorerv1.PolicyDecision{Name: r.name, Phase: r.phase, Verdict: explorerv1.PolicyAllowed})
	a.RequestReinvocation()
	return nil
}

func (r reporter) Validate(_ context.Context, a *Attributes) error {
	a.RecordDecision(explorerv1.PolicyDecision{Name: r.name, Phase: r.phase, Verdict: explorerv1.PolicyAllowed})
	return nil
}

// TestRecordMarksSecondPass: a decision of the chain's second mutating pass is marked
// reinvoked; the first pass's and the validating phase's are not.
func TestRecordMarksSecondPass(t *testing.T) {
	ring := explorer.NewRing(10)
	c, err := NewChain(struct{ MutationInterface }{reporter{"m", "Mutating"}}, struct{ ValidationInterface }{reporter{"v", "Validating"}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetRecorder(NewRecorder(explorer.NewRecorder(ring, explorerv1.ComponentAPIServer, "test")))
	if err := c.Admit(context.Background(), podAttrs(Create)); err != nil {
		t.Fatal(err)
	}
	recs, _ := ring.All()
	if len(recs) != 1 || recs[0].AdmissionRequest == nil {
		t.Fatalf("records: %+v", recs)
	}
	var got []string
	for _, d := range recs[0].AdmissionRequest.Policies {
		got = append(got, fmt.Sprintf("%s:%v", d.Name, d.Reinvoked))
	}
	if want := "m:false m:true v:false"; strings.Join(got, " ") != want {
		t.Errorf("reinvoked marks %q, want %q", strings.Join(got, " "), want)
	}
}
