package wasmpolicy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// TestSchedulerHoldsAllOrNothingUntilReleased: a scheduler stages an AllOrNothing Score
// (built once, out of its profiles) and puts it in its profile only when the policy's
// status releases that generation, as the controller does once every scheduler has it.
func TestSchedulerHoldsAllOrNothingUntilReleased(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithListen("127.0.0.1:27204"))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := runScheduler(t, ctx, cancel, srv)
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	rec := &sink{}
	startLoader(t, wasmpolicy.Config{Component: wasmpolicy.ComponentScheduler, Name: "scheduler-a", Dynamic: dyn, Client: srv.Client,
		Target: &schedwasm.APITier{Scheduler: s}, SchedulerNames: s.Profiles, Sink: rec})
	inForce := func() bool {
		_, api := s.WasmPluginTiers()
		return slices.Contains(api, "prefer-two")
	}
	manifest := strings.Replace(fmt.Sprintf(preferTwo, "Enforce", wasmbuild.WAT(t, "plugins/wasmpolicy/testdata/prefer-two.wat")),
		"  mode: Enforce\n", "  mode: Enforce\n  rollout: AllOrNothing\n", 1)

	gen := apply(t, dyn, manifest)
	rec.await(t, "prefer-two", gen, policyv1alpha1.PhaseStaged)
	if inForce() {
		t.Fatal("a staged generation is in the scheduler's profile before its release")
	}
	// The release, as the controller writes it once every targeted scheduler has it staged.
	patch := fmt.Sprintf(`{"status":{"releasedGeneration":%d}}`, gen)
	if _, err := dyn.Resource(wasmPolicies).Patch(ctx, "prefer-two", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	rec.await(t, "prefer-two", gen, policyv1alpha1.PhaseActive)
	deadline := time.Now().Add(10 * time.Second)
	for !inForce() {
		if time.Now().After(deadline) {
			t.Fatal("released, but not in the scheduler's profile")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
