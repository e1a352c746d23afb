package schedwasm

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// signProfiles builds two batching profiles on one snapshot of four nodes (two in pool
// a, two in pool b): "pools" with pool-filter (which exports wasmkube_sign) and "drain"
// with drain-filter (which does not).
func signProfiles(t *testing.T) (*cache.Cache, *cache.Snapshot, map[string]*runtime.Framework) {
	t.Helper()
	l := newLoader(t)
	reg := plugins.NewInTreeRegistry()
	for name, src := range map[string]string{"pools": "wat:wasm-examples/wat/pool-filter/pool-filter.wat", "drain": "wat:wasm-examples/wat/drain-filter/drain-filter.wat"} {
		factory, err := l.Load(context.Background(), config.WasmPlugin{Spec: modulespec.Spec{Name: name, Path: build(t, src)}}, "")
		if err != nil {
			t.Fatal(err)
		}
		reg[name] = factory
	}
	c := cache.New()
	for i := range 4 {
		n := node(fmt.Sprintf("n%d", i), "", fmt.Sprint(4+i), "16Gi").Node()
		n.Labels["pool"] = []string{"a", "b"}[i%2]
		c.AddNode(n)
	}
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	out := map[string]*runtime.Framework{}
	for _, name := range []string{"pools", "drain"} {
		prof := &config.Profile{SchedulerName: name, Plugins: &config.Plugins{Filter: config.PluginSet{Enabled: []config.Plugin{{Name: name}}}}}
		f, err := runtime.New(context.Background(), reg, prof, runtime.Options{Lister: snap, Parallelism: 2, Batching: true, KeepTotals: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		out[name] = f
	}
	return c, snap, out
}

// TestWasmSignature: a wasm plugin that exports wasmkube_sign signs its pods (pods of
// one pool share a signature, of two pools do not) and keeps batching on: equal pods are
// placed from one pass, on nodes of their pool. A wasm plugin without the export makes
// the pods of its own profile unsignable, naming itself, and no other profile's.
func TestWasmSignature(t *testing.T) {
	c, snap, fw := signProfiles(t)
	ctx := context.Background()
	inPool := func(name, p string) *v1.Pod {
		pd := pod(name, "500m", "1Gi")
		pd.Labels = map[string]string{"pool": p}
		return pd
	}
	a1, a2, b1 := inPool("a1", "a"), inPool("a2", "a"), inPool("b1", "b")
	sa1, why := fw["pools"].SignPod(ctx, a1)
	if sa1 == nil {
		t.Fatalf("pool-filter's profile: pod a1 unsignable: %+v", why)
	}
	if !strings.Contains(string(sa1), `"wasm/pools/pool":"a"`) {
		t.Fatalf("signature %s lacks the plugin's fragment", sa1)
	}
	sa2, _ := fw["pools"].SignPod(ctx, a2)
	sb1, _ := fw["pools"].SignPod(ctx, b1)
	if string(sa1) != string(sa2) || string(sa1) == string(sb1) {
		t.Fatalf("signatures: a1 %s, a2 %s, b1 %s", sa1, sa2, sb1)
	}
	if sig, why := fw["drain"].SignPod(ctx, a1); sig != nil || why == nil || why.Plugin != "drain" || !strings.Contains(why.Reason, "does not export wasmkube_sign") {
		t.Fatalf("drain-filter's profile: signature %s, unsignable %+v; want unsignable by drain", sig, why)
	}

	// Scheduling: pods of pool a from one pass, on pool a's nodes.
	outcomes := []string{}
	for i := range 6 {
		p := inPool(fmt.Sprintf("a%d", 10+i), "a")
		c.UpdateSnapshot(snap)
		res, err := fw["pools"].SchedulePod(ctx, framework.NewCycleState(), p)
		if err != nil {
			t.Fatal(err)
		}
		if res.SuggestedHost != "n0" && res.SuggestedHost != "n2" {
			t.Fatalf("pod of pool a on %s", res.SuggestedHost)
		}
		outcomes = append(outcomes, res.Batch)
		p.Spec.NodeName = res.SuggestedHost
		if err := c.AssumePod(p); err != nil {
			t.Fatal(err)
		}
	}
	if want := "stored reused reused reused reused reused"; strings.Join(outcomes, " ") != want {
		t.Fatalf("batching outcomes %v, want %s", outcomes, want)
	}
	c.UpdateSnapshot(snap)
	res, err := fw["drain"].SchedulePod(ctx, framework.NewCycleState(), inPool("d", "a"))
	if err != nil || res.Batch != runtime.BatchUnsignable {
		t.Fatalf("drain-filter's profile: batch %q, err %v; want %q", res.Batch, err, runtime.BatchUnsignable)
	}
}

// TestSignFragmentOnlyFromSign: sign_fragment outside wasmkube_sign is a garbage result.
func TestSignFragmentOnlyFromSign(t *testing.T) {
	l := newLoader(t)
	_, err := loadPlugin(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "bad"}}, "wat:plugins/testdata/sign-from-filter.wat", "")
	if err == nil || !strings.Contains(err.Error(), "sign_fragment called from filter") {
		t.Fatalf("load: %v; want the smoke call to fail on sign_fragment from filter", err)
	}
}
