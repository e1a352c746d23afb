package printers

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

func TestWasmPolicyReportTable(t *testing.T) {
	r := &policyv1alpha1.WasmPolicyReport{ObjectMeta: metav1.ObjectMeta{Name: "p.kubelet.n1", CreationTimestamp: created}, Policy: "p",
		Status: policyv1alpha1.ComponentStatus{Name: "n1", Component: "kubelet", Phase: policyv1alpha1.PhaseFailed, ObservedGeneration: 3,
			Mode: policyv1alpha1.ModeMonitor, Reason: "LoadFailed", Message: "no wasmkube_probe"}}
	tbl, err := table(policyv1alpha1.SchemeGroupVersion.WithKind("WasmPolicyReport"), []runtime.Object{r}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := columnNames(tbl, 0); !reflect.DeepEqual(got, []string{"Name", "Policy", "Component", "Instance", "Phase", "Generation", "Mode", "Age"}) {
		t.Fatalf("columns %v", got)
	}
	want := []any{"p.kubelet.n1", "p", "kubelet", "n1", "Failed", int64(3), "Monitor", "90m", "LoadFailed", "no wasmkube_probe"}
	if !reflect.DeepEqual(tbl.Rows[0].Cells, want) {
		t.Fatalf("row %v, want %v", tbl.Rows[0].Cells, want)
	}
}
