package nodewasm_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// fallback records that the built-in runner was used.
type fallback struct{ probes, preStops atomic.Int32 }

func (f *fallback) Probe(context.Context, probe.Target, *v1.ProbeHandler) (probe.Result, string, error) {
	f.probes.Add(1)
	return probe.Success, "", nil
}

func (f *fallback) PreStop(context.Context, probe.Target, *v1.LifecycleHandler) error {
	f.preStops.Add(1)
	return nil
}

func newHooks(t *testing.T) *nodewasm.Hooks {
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	hk := nodewasm.New(h, nil)
	t.Cleanup(hk.Close)
	return hk
}

func target(pod *v1.Pod, kind probe.Kind) probe.Target {
	return probe.Target{Pod: pod, Container: &pod.Spec.Containers[0], PodIP: "127.0.0.1", Kind: kind}
}

func testPod(annotations, labels map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: annotations, Labels: labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web"}}}}
}

// TestHooksPickThePodsPlugin: the annotation names the plugin of one probe kind of one
// container; a selector attaches one without an annotation; everything else runs the
// built-in handler; a plugin that is not declared is an error (Unknown) for a probe and a
// failed hook for preStop, naming it.
func TestHooksPickThePodsPlugin(t *testing.T) {
	var body atomic.Value
	body.Store("ok")
	port := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body.Load()) }))
	hk := newHooks(t)
	cfg := &config.Config{
		HookPlugins: []config.HookPlugin{{Spec: modulespec.Spec{Name: "health", Path: wat(t, "get.wat"), FailurePolicy: config.Fail}, Args: []byte(fmt.Sprint(port))}},
		Selectors: []config.Selector{{Plugin: "health", Kind: config.KindLiveness,
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}}},
	}
	if err := hk.Apply(context.Background(), cfg, ""); err != nil {
		t.Fatal(err)
	}
	fb := &fallback{}
	pr, ps := hk.Runners(fb, fb, nil)
	ctx := context.Background()

	annotated := testPod(map[string]string{nodewasm.Annotation(config.KindReadiness, "web"): "health"}, nil)
	if r, msg, err := pr.Probe(ctx, target(annotated, probe.Readiness), nil); r != probe.Success || err != nil {
		t.Fatalf("annotated readiness: %s %q %v", r, msg, err)
	}
	body.Store("warming")
	r, msg, _ := pr.Probe(ctx, target(annotated, probe.Readiness), nil)
	if r != probe.Failure || msg != "wasm plugin health: body not ok" {
		t.Fatalf("annotated readiness, warming: %s %q", r, msg)
	}
	if fb.probes.Load() != 0 {
		t.Fatal("the built-in prober ran for a wasm probe")
	}
	// Its liveness probe has no annotation and no matching selector: built-in.
	if r, _, _ := pr.Probe(ctx, target(annotated, probe.Liveness), nil); r != probe.Success || fb.probes.Load() != 1 {
		t.Fatalf("liveness without a plugin: %s, fallback ran %d times", r, fb.probes.Load())
	}
	// The selector attaches the plugin to the liveness probe of tier=web pods.
	selected := testPod(nil, map[string]string{"tier": "web"})
	if r, _, _ := pr.Probe(ctx, target(selected, probe.Liveness), nil); r != probe.Failure || fb.probes.Load() != 1 {
		t.Fatalf("selected liveness: %s", r)
	}
	if d, err := hk.Describe(ctx, selected, "web", config.KindLiveness, nil); err != nil || !strings.Contains(d, "wasm plugin health") || !strings.Contains(d, "kubelet.selectors[0]") {
		t.Fatalf("describe: %q %v", d, err)
	}
	// A plugin nobody declared.
	missing := testPod(map[string]string{nodewasm.Annotation(config.KindReadiness, "web"): "nope", nodewasm.Annotation(config.KindPreStop, "web"): "nope"}, nil)
	if r, _, err := pr.Probe(ctx, target(missing, probe.Readiness), nil); r != probe.Unknown || err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("missing plugin: %s %v", r, err)
	}
	if _, err := hk.Describe(ctx, missing, "web", config.KindReadiness, nil); err == nil {
		t.Fatal("describe of a missing plugin: no error")
	}
	if err := ps.PreStop(ctx, target(missing, ""), nil); err == nil || !strings.Contains(err.Error(), `"nope"`) || fb.preStops.Load() != 0 {
		t.Fatalf("missing preStop plugin: %v", err)
	}
	if err := ps.PreStop(ctx, target(selected, ""), nil); err != nil || fb.preStops.Load() != 1 {
		t.Fatalf("preStop without a plugin: %v", err)
	}
}

// TestApplyKeepsTheLastGoodPlugins: a config whose module does not load changes nothing;
// a good new module replaces the old one, and calls after the swap run the new logic.
func TestApplyKeepsTheLastGoodPlugins(t *testing.T) {
	port := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	dir := t.TempDir()
	mod := filepath.Join(dir, "probe.wasm")
	copyFile(t, wat(t, "get.wat"), mod)
	hk := newHooks(t)
	decl := config.HookPlugin{Spec: modulespec.Spec{Name: "p", Path: "probe.wasm", FailurePolicy: config.Fail}, Args: []byte(fmt.Sprint(port))}
	cfg := &config.Config{HookPlugins: []config.HookPlugin{decl}}
	if err := hk.Apply(context.Background(), cfg, dir); err != nil {
		t.Fatal(err)
	}
	fb := &fallback{}
	pr, _ := hk.Runners(fb, fb, nil)
	pod := testPod(map[string]string{nodewasm.Annotation(config.KindReadiness, "web"): "p"}, nil)
	check := func(what string, want probe.Result, wantMsg string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, msg, err := pr.Probe(ctx, target(pod, probe.Readiness), nil)
		if r != want || err != nil || !strings.Contains(msg, wantMsg) {
			t.Fatalf("%s: %s %q %v", what, r, msg, err)
		}
	}
	check("get.wat", probe.Success, "")
	// A module file that is not wasm.
	if err := os.WriteFile(mod, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := hk.Apply(context.Background(), cfg, dir); err == nil || !strings.Contains(err.Error(), "kubelet.hookPlugins[0]") {
		t.Fatalf("not wasm: %v", err)
	}
	check("after a module that is not wasm", probe.Success, "")
	// A module that loops in every call, its smoke call too.
	looping := decl
	looping.Path = wat(t, "smokeloop.wat")
	err := hk.Apply(context.Background(), &config.Config{HookPlugins: []config.HookPlugin{looping}}, dir)
	if err == nil || !strings.Contains(err.Error(), "smoke call of wasmkube_probe") || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("looping module: %v", err)
	}
	check("after a module that fails its smoke call", probe.Success, "")
	// A good new module: req.wat always fails with the HTTP status as its reason.
	copyFile(t, wat(t, "req.wat"), mod)
	decl.Args = []byte(fmt.Sprintf(`"%d /"`, port))
	if err := hk.Apply(context.Background(), &config.Config{HookPlugins: []config.HookPlugin{decl}}, dir); err != nil {
		t.Fatal(err)
	}
	check("after the swap", probe.Failure, "wasm plugin p: 200")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to+".tmp", to); err != nil {
		t.Fatal(err)
	}
}

// TestSwapsDoNotFailProbesInFlight: probes running while the config is swapped back and
// forth never meet a closed plugin: every one of them passes.
func TestSwapsDoNotFailProbesInFlight(t *testing.T) {
	port := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	hk := newHooks(t)
	decl := config.HookPlugin{Spec: modulespec.Spec{Name: "p", Path: wat(t, "get.wat"), FailurePolicy: config.Fail}, Args: []byte(fmt.Sprint(port))}
	if err := hk.Apply(context.Background(), &config.Config{HookPlugins: []config.HookPlugin{decl}}, ""); err != nil {
		t.Fatal(err)
	}
	pr, _ := hk.Runners(&fallback{}, &fallback{}, nil)
	pod := testPod(map[string]string{nodewasm.Annotation(config.KindLiveness, "web"): "p"}, nil)
	stop := make(chan struct{})
	var probes, failed atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				r, msg, err := pr.Probe(ctx, target(pod, probe.Liveness), nil)
				cancel()
				probes.Add(1)
				if r != probe.Success {
					failed.Add(1)
					t.Errorf("probe during swaps: %s %q %v", r, msg, err)
				}
			}
		}()
	}
	for i := range 10 {
		d := decl
		d.Timeout = metav1.Duration{Duration: time.Duration(1+i%2) * time.Second} // another declaration: a reload
		if err := hk.Apply(context.Background(), &config.Config{HookPlugins: []config.HookPlugin{d}}, ""); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if probes.Load() == 0 || failed.Load() != 0 {
		t.Fatalf("%d probes, %d failed", probes.Load(), failed.Load())
	}
}
