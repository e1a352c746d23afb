package printers

import (
	"fmt"
	"reflect"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// An EndpointSlice prints as upstream's: NAME, ADDRESSTYPE, PORTS, ENDPOINTS (three, then
// "+ N more..."), AGE.
func TestEndpointSliceRows(t *testing.T) {
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abcde", CreationTimestamp: created},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To(int32(8080))}, {Port: ptr.To(int32(9090))}}}
	for i := range 5 {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.42.0.%d", i+1)}})
	}
	empty := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "empty", CreationTimestamp: created}, AddressType: discoveryv1.AddressTypeIPv4}
	tbl, err := table(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), []runtime.Object{es, empty}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := columnNames(tbl, 0); !equalStrings(got, []string{"Name", "AddressType", "Ports", "Endpoints", "Age"}) {
		t.Errorf("columns %v", got)
	}
	want := [][]any{
		{"web-abcde", "IPv4", "8080,9090", "10.42.0.1,10.42.0.2,10.42.0.3 + 2 more...", "90m"},
		{"empty", "IPv4", "<unset>", "<unset>", "90m"},
	}
	for i, row := range tbl.Rows {
		if !reflect.DeepEqual(row.Cells, want[i]) {
			t.Errorf("row %d: %v, want %v", i, row.Cells, want[i])
		}
	}
}
