package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// preferNode is what the test's loader makes of a "module": a Score plugin that gives
// 100 to the node named in the module file and 0 to others. The real loader (plugins/)
// compiles wasm; the scheduler's side of the contract (load per declared module, reuse
// unchanged ones, keep the last good set on failure) is what this test checks.
type preferNode struct{ name, node string }

func (p *preferNode) Name() string { return p.name }
func (p *preferNode) Score(_ context.Context, _ *framework.CycleState, _ *v1.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	if n.Node().Name == p.node {
		return 100, nil
	}
	return 0, nil
}
func (p *preferNode) ScoreExtensions() framework.ScoreExtensions { return nil }

const wasmConfig = `
scheduler:
  wasmPlugins:
  - name: prefer
    path: prefer.wasm
    failurePolicy: Fail
  profiles:
  - schedulerName: default-scheduler
    plugins:
      score:
        enabled: [{name: prefer, weight: 50}]
`

func TestWasmPluginsLoadReuseAndSwap(t *testing.T) {
	c := newCluster(t, 3)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "wasmkube.yaml")
	module := filepath.Join(dir, "prefer.wasm")
	write := func(path, content string) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(module, "hollow-1")
	write(cfgFile, wasmConfig)
	var loads atomic.Int32
	loader := func(_ context.Context, spec config.WasmPlugin, baseDir string) (framework.PluginFactory, error) {
		loads.Add(1)
		b, err := os.ReadFile(filepath.Join(baseDir, spec.Path))
		if err != nil {
			return nil, err
		}
		target := strings.TrimSpace(string(b))
		if target == "broken" {
			return nil, errors.New("module does not export the ABI version marker")
		}
		return func(context.Context, json.RawMessage, framework.Handle) (framework.Plugin, error) {
			return &preferNode{name: spec.Name, node: target}, nil
		}, nil
	}
	s, _ := c.startScheduler(scheduler.Options{ConfigFile: cfgFile, WasmLoader: loader})
	placed := func(name, want string) {
		t.Helper()
		c.createPod(name, requests("100m", "64Mi"))
		if p := c.waitPod(name, "bound", bound); p.Spec.NodeName != want {
			t.Fatalf("%s on %s, want %s (the wasm policy's choice)", name, p.Spec.NodeName, want)
		}
	}
	placed("a", "hollow-1")
	if loads.Load() != 1 {
		t.Fatalf("%d loads at start, want 1", loads.Load())
	}
	// A config edit that leaves the module alone reuses it.
	if err := s.Reload([]byte(wasmConfig + "\n# comment\n")); err != nil {
		t.Fatal(err)
	}
	if loads.Load() != 1 {
		t.Fatalf("unchanged module loaded again (%d loads)", loads.Load())
	}
	// Rewriting the module swaps the policy live.
	write(module, "hollow-2")
	if err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return loads.Load() == 2, nil
	}); err != nil {
		t.Fatalf("module change not picked up: %d loads", loads.Load())
	}
	placed("b", "hollow-2")
	// A module that fails to load keeps the previous policy in force.
	write(module, "broken")
	if err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := c.client.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedConfigReload" && strings.Contains(e.Message, "ABI version marker") && strings.Contains(e.Message, `"prefer"`) {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no FailedConfigReload event for the broken module: %v", err)
	}
	placed("c", "hollow-2")
	// A built-in name cannot be taken by a module.
	err := s.Reload([]byte(strings.Replace(wasmConfig, "name: prefer\n", "name: NodeName\n", 1)))
	if err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Fatalf("module named like a built-in: %v", err)
	}
}
