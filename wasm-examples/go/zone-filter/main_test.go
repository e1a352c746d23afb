//go:build !wasip1

package main

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm/schedwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

func TestDecide(t *testing.T) {
	allowed := ZoneSet([]string{"zone-1", " zone-2 ", ""})
	tests := []struct {
		zone    string
		hasZone bool
		want    sdk.Code
	}{
		{"zone-1", true, sdk.CodeSuccess},
		{"zone-2", true, sdk.CodeSuccess},
		{"zone-3", true, sdk.CodeUnschedulableAndUnresolvable},
		{"", false, sdk.CodeUnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		if got := Decide(allowed, tt.zone, tt.hasZone); got.Code != tt.want {
			t.Errorf("Decide(%q, %v) = %+v, want code %d", tt.zone, tt.hasZone, got, tt.want)
		}
	}
	if len(allowed) != 2 {
		t.Errorf("ZoneSet kept blanks: %v", allowed)
	}
}

func TestModuleThroughTheHost(t *testing.T) {
	ctx := context.Background()
	f := schedwasmtest.Load(t, "zone", wasmbuild.Go(t, "wasm-examples/go/zone-filter"))
	if _, err := f(ctx, nil, nil); err == nil {
		t.Error("no args: the plugin loaded, want its init to reject it")
	}
	p, err := f(ctx, json.RawMessage(`{"zones": ["zone-1", "zone-2"]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*framework.NodeInfo
	for _, zone := range []string{"zone-1", "zone-2", "zone-3", ""} {
		ni := framework.NewNodeInfo()
		labels := map[string]string{}
		if zone != "" {
			labels["topology.kubernetes.io/zone"] = zone
		}
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-" + zone, Labels: labels}})
		nodes = append(nodes, ni)
	}
	tests := []struct {
		annotation string
		pass       []bool
	}{
		{"", []bool{true, true, false, false}},
		{"zone-3", []bool{false, false, true, false}},
		{"zone-1,zone-3", []bool{true, false, true, false}},
	}
	for _, tt := range tests {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		if tt.annotation != "" {
			pod.Annotations = map[string]string{"wasmkube.io/zone": tt.annotation}
		}
		st := make([]*framework.Status, len(nodes))
		p.(framework.BatchFilterPlugin).FilterBatch(ctx, framework.NewCycleState(), pod, nodes, st)
		for i := range nodes {
			if got := st[i] == nil; got != tt.pass[i] {
				t.Errorf("annotation %q, node %s: passed=%v (%v), want %v", tt.annotation, nodes[i].Node().Name, got, st[i].Message(), tt.pass[i])
			}
			if st[i] != nil && st[i].Code() != framework.UnschedulableAndUnresolvable {
				t.Errorf("node %s: code %v", nodes[i].Node().Name, st[i].Code())
			}
		}
	}
}
