package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// The second variant of a bench policy's module differs only by a custom section: another
// digest, a module that still loads with the same entry points.
func TestWithCustomSectionLoads(t *testing.T) {
	wasm, err := os.ReadFile(wasmbuild.WAT(t, "plugins/wasmpolicy/testdata/say-no.wat"))
	if err != nil {
		t.Fatal(err)
	}
	v2 := withCustomSection(wasm, "wasmkube-bench", []byte("v2"))
	if bytes.Equal(v2, wasm) || !bytes.HasPrefix(v2, wasm) {
		t.Fatal("the variant must be the module with a section appended")
	}
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	for name, b := range map[string][]byte{"v1": wasm, "v2": v2} {
		m, err := host.Load(context.Background(), wasmhost.LoadOptions{Name: name, Path: name + ".wasm", Wasm: b})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := m.Kinds(); len(got) != 1 {
			t.Errorf("%s: entry points %v, want the probe alone", name, got)
		}
		m.Close(context.Background())
	}
	if q := quantile([]float64{5, 1, 4, 2, 3}, 0.5); q != 3 {
		t.Errorf("median %v, want 3", q)
	}
}

// bench policy end to end, small: every change reaches every component (3 API servers, the
// scheduler, 3 hollow kubelets), each component writes its report for it, the writers meet
// no failure and no wrong verdict across the swaps, and nothing is written while idle.
func TestBenchPolicyJSON(t *testing.T) {
	var b strings.Builder
	err := runPolicyBench(&b, policyBenchOptions{servers: 3, nodes: 3, changes: 2, writers: 4, swaps: 2, repo: "../..",
		output: "json", logLevel: "error", idle: 3 * time.Second, pause: 200 * time.Millisecond, waitTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var res PolicyBenchResult
	if err := json.Unmarshal([]byte(b.String()), &res); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, b.String())
	}
	if res.Changes != 2 || res.ActiveP99ms <= 0 || res.ReadyP99ms < res.ActiveP50ms || len(res.ActiveByHookP99) != 3 {
		t.Fatalf("(a): %s", b.String())
	}
	if res.GoModuleBytes < 2<<20 || res.FirstFetchCompileMs <= 0 || res.FirstLoadClusterMs <= 0 {
		t.Fatalf("(b): %s", b.String())
	}
	if res.Requests == 0 || res.Failed != 0 || res.WronglyAdmitted != 0 || res.WronglyRefused != 0 {
		t.Fatalf("(c): %s", b.String())
	}
	if res.ReportWritesPerComponentChange < 1 || res.IdleReportWrites != 0 || res.IdleStatusWrites != 0 {
		t.Fatalf("(d): %s", b.String())
	}
}
