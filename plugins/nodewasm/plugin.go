package nodewasm

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// DefaultLimit is the time limit of a call whose caller gives none (a preStop without a
// grace deadline), and of the module's own start-up calls when the config sets no cap.
const DefaultLimit = time.Second

// Plugin is one loaded hook plugin: a module's instance pools with its args (one per kind,
// so that drains holding instances for a grace period never delay probes), its failure
// policy and its time cap.
type Plugin struct {
	name, path string
	policy     string
	cap        time.Duration
	pools      map[*wasmhost.Kind]*wasmhost.Pool
	key        string
	// loaded closes the pools and the module: when the last set of Hooks holding the
	// plugin lets go, or at once (Close) for one that never went in force.
	loaded *wasmhost.Loaded
	// wasmPolicy is the WasmPolicy of an API-tier plugin; monitor: in Monitor mode it runs
	// beside the pod's own probe, which decides.
	wasmPolicy string
	monitor    bool
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return p.name }

// Path is the module file the plugin was loaded from.
func (p *Plugin) Path() string { return p.path }

// Pool is the instance pool of kind k (Probe or PreStop), nil if the module does not
// export it.
func (p *Plugin) Pool(k *wasmhost.Kind) *wasmhost.Pool { return p.pools[k] }

// Kinds are the kubelet kinds the module exports.
func (p *Plugin) Kinds() wasmhost.Kinds {
	var out wasmhost.Kinds
	for _, k := range Kinds {
		if p.pools[k] != nil {
			out = append(out, k)
		}
	}
	return out
}

// Close closes the plugin's instances and module at once; calls in flight finish, later
// calls fail. Hooks closes the plugins it put in force itself, after their last call.
func (p *Plugin) Close() { p.loaded.Close() }

// Load reads, compiles and checks the module of spec (Path relative to baseDir), with the
// network capability granted, builds its pool with the args (running wasmkube_init) and
// smoke-calls it. Every error names the plugin and path.
func Load(ctx context.Context, h *wasmhost.Host, spec config.HookPlugin, baseDir string) (*Plugin, error) {
	lerr := func(err error) error { return &wasmhost.LoadError{Plugin: spec.Name, Path: spec.Path, Err: err} }
	if err := spec.Validate(modulespec.RowOf("kubelet"), nil); err != nil {
		return nil, lerr(err)
	}
	file, err := spec.Resolve(baseDir)
	if err != nil {
		return nil, lerr(err)
	}
	policy := spec.Policy()
	mod, err := h.Load(ctx, wasmhost.LoadOptions{
		Name: spec.Name, Path: spec.Path, Wasm: file.Wasm, Timeout: spec.TimeoutOr(DefaultLimit),
		MemoryLimit: spec.MemoryBytes(), Capabilities: []string{NetworkCapability},
	})
	if err != nil {
		return nil, err
	}
	if len(mod.Kinds().Intersect(Kinds)) == 0 {
		_ = mod.Close(ctx)
		return nil, lerr(errors.New("exports neither wasmkube_probe nor wasmkube_prestop: not a kubelet hook plugin"))
	}
	args := []byte(spec.Args)
	if len(args) == 0 || string(args) == "null" {
		args = nil
	}
	p := &Plugin{name: spec.Name, path: spec.Path, policy: policy, cap: spec.Timeout.Duration, pools: map[*wasmhost.Kind]*wasmhost.Pool{}, key: file.Key(spec), loaded: wasmhost.NewLoaded(mod)}
	fail := func(err error) (*Plugin, error) {
		p.loaded.Close()
		return nil, err
	}
	for _, k := range mod.Kinds().Intersect(Kinds) {
		size := spec.Pool
		if size <= 0 {
			size = config.DefaultProbePool
			if k == PreStop {
				size = config.DefaultPreStopPool
			}
		}
		pool, err := p.loaded.NewPool(ctx, args, size)
		if err != nil {
			return fail(err)
		}
		p.pools[k] = pool
	}
	// One smoke call of each kind: the pools run the same module with the same args.
	for _, pool := range p.pools {
		if err := Smoke(ctx, pool); err != nil {
			return fail(lerr(err))
		}
		break
	}
	return p, nil
}

// limit is a call's time limit: what the caller's deadline leaves (the probe's
// timeoutSeconds, the rest of the grace period), capped by the plugin's timeout.
func (p *Plugin) limit(ctx context.Context) time.Duration {
	d := DefaultLimit
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	} else if p.cap > 0 {
		d = p.cap
	}
	if p.cap > 0 && p.cap < d {
		d = p.cap
	}
	return max(d, time.Millisecond)
}

// Probe runs the plugin's wasmkube_probe for container of pod. ctx's deadline is the
// probe's timeoutSeconds. A plugin failure (trap, timeout, memory, garbage, Error) is a
// probe failure with that reason, or a success under failurePolicy Ignore; the kubelet
// giving up (ctx cancelled) is Unknown.
func (p *Plugin) Probe(ctx context.Context, pod *v1.Pod, container, probeKind, podIP string) (probe.Result, string) {
	pool := p.pools[Probe]
	if pool == nil {
		return probe.Failure, fmt.Sprintf("wasm plugin %s does not export wasmkube_probe: it cannot serve a %s probe", p.name, probeKind)
	}
	c := &Call{Kind: Probe, Pod: pod, Container: container, ProbeKind: probeKind, PodIP: podIP, Timeout: p.limit(ctx)}
	err := c.Do(ctx, pool)
	switch {
	case err == nil && c.Code == CodeFailure:
		reason := c.Reason
		if reason == "" {
			reason = "probe failed (the plugin gave no reason)"
		}
		return probe.Failure, "wasm plugin " + p.name + ": " + reason
	case err == nil:
		return probe.Success, ""
	}
	if canceled(err) {
		if !late(ctx) {
			return probe.Unknown, "" // the kubelet gave up on the probe (the container stops)
		}
		pool.CountFailure(Probe)
		if p.policy == config.Ignore {
			return probe.Success, ""
		}
		return probe.Failure, lateMessage(p.name, c, pool, "the probe's timeoutSeconds")
	}
	if p.policy == config.Ignore {
		return probe.Success, ""
	}
	return probe.Failure, failure(p.name, err)
}

// lateMessage says why a call ended at its caller's deadline rather than by its own limit:
// it never got an instance, or the host's timer ran late (a loaded machine).
func lateMessage(name string, c *Call, pool *wasmhost.Pool, limit string) string {
	if !c.started {
		return fmt.Sprintf("wasm plugin %s failed (timeout): no instance was free within %s (all %d busy)", name, limit, pool.Size())
	}
	return fmt.Sprintf("wasm plugin %s failed (timeout): the call did not finish within %s", name, limit)
}

// canceled reports whether a call ended because its caller gave up (or its deadline
// passed before an instance was free).
func canceled(err error) bool {
	var ce *wasmhost.CallError
	return errors.As(err, &ce) && ce.Reason == wasmhost.ReasonCanceled
}

// late reports whether ctx ended at its deadline (not by cancellation).
func late(ctx context.Context) bool { return errors.Is(ctx.Err(), context.DeadlineExceeded) }

// PreStop runs the plugin's wasmkube_prestop for container of pod. ctx's deadline is the
// end of the grace period. A failure is an error (a FailedPreStopHook event) unless the
// policy is Ignore; either way the caller goes on with SIGTERM.
func (p *Plugin) PreStop(ctx context.Context, pod *v1.Pod, container, podIP string) error {
	pool := p.pools[PreStop]
	if pool == nil {
		return fmt.Errorf("wasm plugin %s does not export wasmkube_prestop: it cannot serve a preStop hook", p.name)
	}
	c := &Call{Kind: PreStop, Pod: pod, Container: container, PodIP: podIP, Timeout: p.limit(ctx)}
	err := c.Do(ctx, pool)
	if err == nil {
		return nil
	}
	if canceled(err) {
		if !late(ctx) {
			return fmt.Errorf("wasm plugin %s: canceled (the kubelet is stopping)", p.name)
		}
		pool.CountFailure(PreStop)
		if p.policy == config.Ignore {
			return nil
		}
		return errors.New(lateMessage(p.name, c, pool, "the grace period"))
	}
	if p.policy == config.Ignore {
		return nil
	}
	return errors.New(failure(p.name, err))
}

// failure is the message of a failed call: "wasm plugin drain failed (timeout): call
// exceeded its time limit of 28.5s".
func failure(name string, err error) string {
	var ce *wasmhost.CallError
	if errors.As(err, &ce) {
		return fmt.Sprintf("wasm plugin %s failed (%s): %v", name, ce.Reason, ce.Err)
	}
	return fmt.Sprintf("wasm plugin %s failed: %v", name, err)
}
