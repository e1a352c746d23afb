package wasmpolicy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// TestKubeletHoldsAllOrNothingUntilReleased: a kubelet stages an AllOrNothing probe (its
// plugin loaded, out of the node's hook plugins) and serves it only once the policy's
// status releases that generation.
func TestKubeletHoldsAllOrNothingUntilReleased(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithListen("127.0.0.1:27205"))
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"zone": "a"}}}
	if _, err := srv.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	k := startKubelet(t, srv, dyn, "node-a", nil)
	manifest := strings.Replace(fmt.Sprintf(sayNo, "Enforce", wasmbuild.WAT(t, "plugins/wasmpolicy/testdata/say-no.wat")),
		"  mode: Enforce\n", "  mode: Enforce\n  rollout: AllOrNothing\n", 1)

	gen := apply(t, dyn, manifest)
	k.sink.await(t, "say-no", gen, policyv1alpha1.PhaseStaged)
	if slices.Contains(k.hooks.Plugins(), "say-no") {
		t.Fatal("a staged generation serves pods before its release")
	}
	patch := fmt.Sprintf(`{"status":{"releasedGeneration":%d}}`, gen)
	if _, err := dyn.Resource(wasmPolicies).Patch(ctx, "say-no", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	k.sink.await(t, "say-no", gen, policyv1alpha1.PhaseActive)
	if !slices.Contains(k.hooks.Plugins(), "say-no") {
		t.Fatalf("released, but the node's plugins are %v", k.hooks.Plugins())
	}
}
