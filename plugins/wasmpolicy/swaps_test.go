package wasmpolicy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// TestAPITierSwapsRecorded: an API server's swaps of an API-tier WasmPolicy are on the
// decision explorer's timeline (records?type=Swap), as the file tier's are: the revision
// put in force (generation, digest, Applied), a revision that failed (Failed, the
// reason, the digest still in force as From), a change of mode, and a fetch that fails
// on every retry (one swap, not one per retry).
func TestAPITierSwapsRecorded(t *testing.T) {
	reg := startRegistry(t, "127.0.0.1:27501")
	goodDigest := reg.push(t, "plugins/admitwasm/testdata/require-team.wat", "policies/require-team:v1")
	brokenDigest := reg.push(t, "plugins/admitwasm/testdata/broken.wat", "policies/require-team:v2")
	pol := newPolicies(t, prometheus.NewRegistry())
	srv := apiservertest.Start(t, apiservertest.WithAdmission(pol), apiservertest.WithListen("127.0.0.1:27502"))
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	rec := &sink{}
	startLoader(t, wasmpolicy.Config{Component: wasmpolicy.ComponentAPIServer, Name: "apiserver-a", Dynamic: dyn, Client: srv.Client,
		Target: pol, Cache: wasmoci.Options{Dir: t.TempDir()}, Sink: wasmpolicy.RecordSwaps(rec, srv.API.ExplorerRecorder),
		RetryInterval: 200 * time.Millisecond})

	// pinned by digest: no tag to resolve
	good := reg.addr + "/policies/require-team@" + goodDigest
	g1 := apply(t, dyn, fmt.Sprintf(requireTeam, "Enforce", good))
	rec.await(t, "require-team", g1, policyv1alpha1.PhaseActive)
	g2 := apply(t, dyn, fmt.Sprintf(requireTeam, "Enforce", reg.addr+"/policies/require-team@"+brokenDigest))
	rec.await(t, "require-team", g2, policyv1alpha1.PhaseFailed)
	g3 := apply(t, dyn, fmt.Sprintf(requireTeam, "Monitor", good))
	rec.await(t, "require-team", g3, policyv1alpha1.PhaseActive)
	// a module that is not there: the fetch is retried, and fails again the same way
	missing := "sha256:" + strings.Repeat("0", 64)
	g4 := apply(t, dyn, fmt.Sprintf(requireTeam, "Monitor", reg.addr+"/policies/require-team@"+missing))
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rec.mu.Lock()
		n := 0
		for _, s := range rec.all {
			if s.ObservedGeneration == g4 && s.Phase == policyv1alpha1.PhaseFailed {
				n++
			}
		}
		rec.mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fetch of a missing module was not retried: %d failures", n)
		}
	}

	raw, err := srv.Client.CoreV1().RESTClient().Get().AbsPath(explorerv1.PathPrefix, "records").Param("type", string(explorerv1.TypeSwap)).
		Do(context.Background()).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var list explorerv1.RecordList
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	var swaps []explorerv1.Swap
	for _, r := range list.Items {
		if r.Swap != nil && r.Swap.Tier == wasmpolicy.TierAPI && r.Swap.Policy == "require-team" {
			if r.Component != explorerv1.ComponentAPIServer {
				t.Errorf("swap recorded by %q, want the API server", r.Component)
			}
			swaps = append(swaps, *r.Swap)
		}
	}
	if len(swaps) != 4 {
		t.Fatalf("API-tier swaps of require-team: %d, want 4 (a retried failure is one): %s", len(swaps), raw)
	}
	if s := swaps[0]; s.Result != explorerv1.SwapApplied || s.Generation != g1 || s.To == nil || s.To.Digest != goodDigest ||
		s.From != nil || len(s.Changes) != 1 || !strings.HasPrefix(s.Changes[0], "policy added") {
		t.Errorf("first revision: %+v", s)
	}
	if s := swaps[1]; s.Result != explorerv1.SwapFailed || s.Generation != g2 || !strings.Contains(s.Reason, wasmpolicy.ReasonLoadFailed) ||
		!strings.Contains(s.Reason, "smoke call") || s.From == nil || s.From.Digest != goodDigest || s.To == nil || s.To.Digest != brokenDigest {
		t.Errorf("failed revision: %+v", s)
	}
	if s := swaps[2]; s.Result != explorerv1.SwapApplied || s.Generation != g3 || !strings.Contains(strings.Join(s.Changes, ";"), "mode Enforce -> Monitor") {
		t.Errorf("mode change: %+v", s)
	}
	if s := swaps[3]; s.Result != explorerv1.SwapFailed || s.Generation != g4 || !strings.Contains(s.Reason, wasmpolicy.ReasonFetchFailed) {
		t.Errorf("missing module: %+v", s)
	}
}
