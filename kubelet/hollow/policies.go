package hollow

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// PolicyOptions make every hollow node load the WasmPolicies of the kubelet hooks that
// select it, as a real kubelet does (cmd/wasmkube's runHookPolicies): a
// plugins/wasmpolicy Loader with the node's name (it watches its own Node, so its labels
// decide), its hook plugins (plugins/nodewasm), and a report Sink writing the node's
// WasmPolicyReports. The node carries report.LoadsPoliciesAnnotation, so the roll-up
// counts it. What a hollow node skips is running the hooks: its pods have no containers,
// so no probe or preStop is ever called; a policy is fetched, compiled, ABI-checked,
// initialized with its settings and smoke-called, then held in force.
type PolicyOptions struct {
	// CacheDir holds the module cache (CacheDir/wasm-modules) and compiled code
	// (CacheDir/wasm-cache) that every hollow node of the process shares. Required.
	CacheDir string
	// Settle is the report sinks' report.Options.Settle (0: its default).
	Settle time.Duration
}

// policyAgents are the hollow nodes' policy loaders: one compiled-module cache (a wasm
// host) for all, one loader, hook set and report sink per node.
type policyAgents struct {
	host  *wasmhost.Host
	hooks []*nodewasm.Hooks
}

// runPolicies starts a loader and a report sink for every node and returns once each has
// applied its first selection (or ctx ended); they run until ctx ends, then close.
func (n *nodes) runPolicies(ctx context.Context, cfg *rest.Config, wg *sync.WaitGroup) error {
	po := n.opts.Policies
	if po.CacheDir == "" {
		return fmt.Errorf("hollow nodes: PolicyOptions.CacheDir is required")
	}
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension},
		CacheDir: filepath.Join(po.CacheDir, "wasm-cache"), Logger: n.log})
	if err != nil {
		return fmt.Errorf("hollow nodes: wasm host: %w", err)
	}
	// One client of each kind for all loaders and sinks (one rate limit, one connection).
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("hollow nodes: client: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("hollow nodes: client: %w", err)
	}
	agents := &policyAgents{host: host}
	var synced []<-chan struct{}
	for i := 0; i < n.opts.Count; i++ {
		name := NodeName(n.opts.Prefix, i)
		log := n.log.With("node", name)
		sink, err := report.New(report.Options{Client: dyn, Component: wasmpolicy.ComponentKubelet, Instance: name, Settle: po.Settle, Logger: log})
		if err != nil {
			return err
		}
		hooks := nodewasm.New(host, log)
		agents.hooks = append(agents.hooks, hooks)
		loader, err := wasmpolicy.New(wasmpolicy.Config{
			Component: wasmpolicy.ComponentKubelet, Name: name, Dynamic: dyn, Client: client, Target: hooks,
			Cache: wasmoci.Options{Dir: filepath.Join(po.CacheDir, "wasm-modules")},
			Sink:  sink, Logger: log,
		})
		if err != nil {
			return err
		}
		synced = append(synced, loader.Synced())
		wg.Add(2)
		go func() { defer wg.Done(); sink.Run(ctx) }()
		go func() { defer wg.Done(); loader.Run(ctx) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		agents.close()
	}()
	for _, s := range synced {
		select {
		case <-s:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// close retires every node's plugins and the host's idle modules.
func (a *policyAgents) close() {
	for _, h := range a.hooks {
		h.Close()
	}
	_ = a.host.Close(context.Background())
}
