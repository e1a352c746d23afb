//go:build !wasip1

package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/plugins/noderesources"
	"github.com/wasmkube/wasmkube/plugins/schedwasm/schedwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

func TestSpreading(t *testing.T) {
	res := sdk.NodeResources{Allocatable: sdk.Resources{MilliCPU: 4000, Memory: 8 << 30}, NonZeroRequested: sdk.NonZero{MilliCPU: 1000, Memory: 2 << 30}}
	tests := []struct {
		cpu, mem int64
		want     int64
	}{
		{0, 0, 75},
		{1000, 2 << 30, 50},
		{8000, 16 << 30, 0}, // overfull counts as full
	}
	for _, tt := range tests {
		if got := Spreading(tt.cpu, tt.mem, &res); got != tt.want {
			t.Errorf("Spreading(%d, %d) = %d, want %d", tt.cpu, tt.mem, got, tt.want)
		}
	}
	if got := Spreading(100, 100, &sdk.NodeResources{}); got != 0 {
		t.Errorf("no allocatable: %d, want 0", got)
	}
}

// The compiled module, run by the real host, scores exactly as the native
// NodeResourcesFit with the LeastAllocated strategy.
func TestModuleMatchesNativeLeastAllocated(t *testing.T) {
	ctx := context.Background()
	f := schedwasmtest.Load(t, "spread", wasmbuild.Go(t, "wasm-examples/go/spread-score"))
	p, err := f(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	native, err := noderesources.New(ctx, json.RawMessage(`{"scoringStrategy":{"type":"LeastAllocated"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if best := schedwasmtest.ScoresMatch(t, p, native, schedwasmtest.RequestPod("500m", "1Gi"), schedwasmtest.ResourceNodes()); best != "big" { // the emptiest node wins
		t.Errorf("best node %s, want big", best)
	}
}
