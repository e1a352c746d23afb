package admitwasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/internal/configwatch"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// Options configure Policies.
type Options struct {
	// Host runs the modules; it must have Extension.
	Host *wasmhost.Host
	// ConfigFile is the wasmkube config file whose `admission:` section declares the
	// policies; Run watches it and swaps the policies when it changes. Empty: Config.
	ConfigFile string
	// Config is the config file's content when there is no file (in-process use, tests);
	// module paths are then relative to the working directory.
	Config []byte
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer gets the admission metrics (nil: not registered).
	Registerer prometheus.Registerer

	// buildHook and onApply are the tests' view of reloads (export_test.go).
	buildHook func(configwatch.Snapshot)
	onApply   func(configwatch.Snapshot)
}

// Policies is the API server's wasm admission policies: an admission.Source whose set of
// policies is replaced as a whole, through one atomic pointer, when the config changes.
// A request reads the pointer once (the chain asks once per request), so it runs every
// policy of one set and never half of an old one and half of a new one.
type Policies struct {
	opts    Options
	log     *slog.Logger
	baseDir string
	metrics *metrics
	shared  *wasmpolicy.Metrics
	set     atomic.Pointer[policySet]
	rd      atomic.Pointer[readerBox]
	rec     atomic.Pointer[recorderBox]
	// explorer records swaps for the decision explorer (explorer.go); nil until set.
	explorer atomic.Pointer[explorer.Recorder]

	reloadMu sync.Mutex
	ctx      context.Context
	// staged holds the API tier's policies loaded out of force (rollout AllOrNothing,
	// apitier.go), under reloadMu.
	staged *wasmpolicy.Staging[*Policy]
}

type readerBox struct{ r admission.ObjectReader }

type recorderBox struct{ r record.EventRecorder }

// policySet is everything one version of the config and of the API tier produced.
type policySet struct {
	raw []byte
	cfg *Config
	// policies are the file tier's, in config order, then the API tier's (WasmPolicies,
	// by name): the file tier is evaluated first.
	policies []*Policy
	// byName are the file tier's, api the API tier's.
	byName     map[string]*Policy
	api        []*Policy
	mutators   []admission.MutationInterface
	validators []admission.ValidationInterface
	// lease holds the policies while the set is in force or a request uses it.
	lease *wasmhost.Set
}

// New reads the config and loads its policies: every module compiled, checked, given
// its args and smoke-called. A bad config or a module that fails is an error here;
// later reloads keep the last good set instead.
func New(ctx context.Context, opts Options) (*Policies, error) {
	if opts.Host == nil {
		return nil, errors.New("admitwasm: Options.Host is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	o := &Policies{opts: opts, log: opts.Logger.With("component", "admission"), metrics: newMetrics(opts.Registerer), shared: wasmpolicy.NewMetrics(opts.Registerer), ctx: ctx,
		staged: wasmpolicy.NewStaging(func(p *Policy) { p.loaded.Close() })}
	data := opts.Config
	if opts.ConfigFile != "" {
		abs, err := filepath.Abs(opts.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("admission: config file %s: %w", opts.ConfigFile, err)
		}
		o.opts.ConfigFile, o.baseDir = abs, filepath.Dir(abs)
		if data, err = os.ReadFile(abs); err != nil {
			return nil, fmt.Errorf("admission: read config file: %w", err)
		}
	} else if wd, err := os.Getwd(); err == nil {
		o.baseDir = wd
	}
	ps, err := o.build(ctx, configwatch.Static(data), nil)
	if err != nil {
		return nil, err
	}
	o.set.Store(ps)
	if len(ps.policies) > 0 {
		o.log.Info("admission policies loaded", "policies", o.InForce())
	}
	return o, nil
}

// Plugins implements admission.Source: the mutating and validating policies in force.
// A caller that may run them after a swap uses AcquirePlugins.
func (o *Policies) Plugins() ([]admission.MutationInterface, []admission.ValidationInterface) {
	ps := o.set.Load()
	return ps.mutators, ps.validators
}

// AcquirePlugins implements admission.LeasedSource: the policies in force, kept open until
// release is called (the end of the request), whatever swap happens meanwhile.
func (o *Policies) AcquirePlugins() (m []admission.MutationInterface, v []admission.ValidationInterface, release func()) {
	for {
		if ps := o.set.Load(); ps.lease.Acquire() {
			return ps.mutators, ps.validators, ps.lease.Release
		}
	}
}

// InForce names the policies in force, in config order.
func (o *Policies) InForce() []string {
	var out []string
	for _, p := range o.set.Load().policies {
		out = append(out, p.spec.Name)
	}
	return out
}

// SetObjectReader implements admission.WantsObjectReader: the API server's watch cache
// serves namespace selectors and context-aware reads. It refuses a set in force that
// grants a resource the server does not serve.
func (o *Policies) SetObjectReader(r admission.ObjectReader) error {
	o.rd.Store(&readerBox{r})
	for i, p := range o.set.Load().cfg.Policies {
		for k, res := range p.Capabilities {
			if _, _, ok := r.Resource(res); !ok {
				return &ConfigError{Field: fmt.Sprintf("admission.policies[%d].capabilities[%d]", i, k), Msg: fmt.Sprintf("%q is not a resource this API server serves", res)}
			}
		}
		o.warm(p.Capabilities)
	}
	return nil
}

// warm fills the reader's cache of the granted resources now, so that a policy's first
// read does not wait for a list inside its time limit.
func (o *Policies) warm(resources []string) {
	r := o.reader()
	if r == nil {
		return
	}
	for _, res := range resources {
		ctx, cancel := context.WithTimeout(o.ctx, 5*time.Second)
		if _, err := r.List(ctx, res, ""); err != nil {
			o.log.Warn("admission: could not read a granted resource yet", "resource", res, "err", err)
		}
		cancel()
	}
}

func (o *Policies) reader() admission.ObjectReader {
	if b := o.rd.Load(); b != nil {
		return b.r
	}
	return nil
}

// build turns config bytes into a policy set, reusing old's policies whose declaration
// and module bytes did not change (their instances stay warm across a reload). The new
// modules are loaded in parallel; a build whose snapshot a newer change supersedes stops
// after the load in progress and returns configwatch.ErrSuperseded.
func (o *Policies) build(ctx context.Context, snap configwatch.Snapshot, old *policySet) (_ *policySet, err error) {
	cfg, err := ParseConfig(snap.Data)
	if err != nil {
		return nil, err
	}
	ps := &policySet{raw: snap.Data, cfg: cfg, byName: map[string]*Policy{}}
	type slot struct {
		spec       PolicySpec
		path       string
		bin        []byte
		key        string
		p          *Policy
		err        error
		fresh      bool
		superseded bool
	}
	slots := make([]slot, len(cfg.Policies))
	for i, spec := range cfg.Policies {
		field := fmt.Sprintf("admission.policies[%d]", i)
		file, err := spec.Resolve(o.baseDir)
		if err != nil {
			return nil, &ConfigError{Field: field + ".path", Msg: fmt.Sprintf("policy %q: %v", spec.Name, err)}
		}
		s := slot{spec: spec, path: file.Path, bin: file.Wasm, key: file.Key(spec)}
		if old != nil {
			if q, ok := old.byName[spec.Name]; ok && q.key == s.key {
				s.p = q
			}
		}
		slots[i] = s
	}
	// Compile and smoke-call the new modules in parallel (at most one per CPU): a swap of
	// several policies costs the slowest one, not their sum.
	sem := make(chan struct{}, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range slots {
		if slots[i].p != nil {
			continue
		}
		wg.Add(1)
		go func(s *slot) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if snap.Superseded() {
				s.superseded = true
				return
			}
			s.p, s.err = o.newPolicy(ctx, s.spec, s.path, s.bin, s.key)
			s.fresh = s.err == nil
			snap.Building()
		}(&slots[i])
	}
	wg.Wait()
	defer func() {
		if err != nil {
			for _, s := range slots {
				if s.fresh {
					s.p.loaded.Close()
				}
			}
		}
	}()
	if snap.Superseded() {
		return nil, configwatch.ErrSuperseded
	}
	for i, s := range slots {
		field := fmt.Sprintf("admission.policies[%d]", i)
		if s.superseded {
			return nil, configwatch.ErrSuperseded
		}
		if s.err != nil {
			var ce *ConfigError
			if errors.As(s.err, &ce) {
				ce.Field = field + "." + ce.Field
				return nil, ce
			}
			return nil, &ConfigError{Field: field, Msg: s.err.Error()}
		}
		if s.fresh {
			o.warm(s.spec.Capabilities)
		}
		ps.byName[s.spec.Name] = s.p
		ps.policies = append(ps.policies, s.p)
	}
	var api []*Policy
	if old != nil {
		api = old.api
	}
	return o.compose(ps, api), nil
}

// compose completes a set of file-tier policies (ps.policies, ps.byName) with the API
// tier's policies that no file policy's name shadows, and takes its lease.
func (o *Policies) compose(ps *policySet, api []*Policy) *policySet {
	file := ps.policies
	ps.policies, ps.api, ps.mutators, ps.validators = nil, nil, nil, nil
	for _, p := range file {
		ps.policies = append(ps.policies, p)
	}
	for _, p := range api {
		if ps.byName[p.spec.Name] == nil {
			ps.policies = append(ps.policies, p)
			ps.api = append(ps.api, p)
		}
	}
	for _, p := range ps.policies {
		kinds := p.Kinds()
		if p.hook != nil {
			kinds = wasmhost.Kinds{p.hook} // an API policy serves its hook only
		}
		if kinds.Has(Mutate) {
			ps.mutators = append(ps.mutators, p)
		}
		if kinds.Has(Validate) {
			ps.validators = append(ps.validators, p)
		}
	}
	ps.lease = leaseOf(ps.policies)
	o.inForce(ps)
	return ps
}

// Reload builds the policies of a whole config file's bytes and, if every one loads,
// passes and smoke-calls, puts them in force for the requests that start from then on.
// On failure the set in force stays, and the failure is logged, counted
// (wasmkube_admission_config_reloads_total{result="failure"}) and reported as a Warning
// event FailedAdmissionConfigReload in kube-system.
func (o *Policies) Reload(data []byte) error { return o.reload(configwatch.Static(data)) }

// reload is Reload of one snapshot of the file: a snapshot that a newer change
// supersedes before its set is in force is discarded (configwatch.ErrSuperseded), never
// applied, and is no failure.
func (o *Policies) reload(snap configwatch.Snapshot) error {
	o.reloadMu.Lock()
	defer o.reloadMu.Unlock()
	ps, err := o.build(o.ctx, snap, o.set.Load())
	if errors.Is(err, configwatch.ErrSuperseded) {
		o.metrics.reloads.WithLabelValues("superseded").Inc()
		o.log.Debug("admission config reload superseded by a newer change; not applied")
		return err
	}
	if err != nil {
		o.metrics.reloads.WithLabelValues("failure").Inc()
		o.log.Error("admission config reload failed; the policies in force stay", "err", err, "policies", o.InForce())
		o.event(configRef(), v1.EventTypeWarning, "FailedAdmissionConfigReload",
			fmt.Sprintf("admission config not applied, the policies in force stay: %v", err))
		o.recordSwaps(nil, nil, err)
		return err
	}
	// The last check before the swap: no set that the file no longer says goes in force.
	if snap.Superseded() {
		o.metrics.reloads.WithLabelValues("superseded").Inc()
		o.discard(ps)
		return configwatch.ErrSuperseded
	}
	old := o.set.Swap(ps)
	// Requests that took the old set finish on it; its policies that ps does not keep
	// close after the last of them.
	old.lease.Retire()
	if o.opts.onApply != nil {
		o.opts.onApply(snap)
	}
	if slices.Equal(old.policies, ps.policies) {
		return nil // another section of the file changed (the scheduler's, the kubelet's)
	}
	o.metrics.reloads.WithLabelValues("success").Inc()
	o.recordSwaps(old, ps, nil)
	o.log.Info("admission config reloaded", "policies", o.InForce())
	o.event(configRef(), v1.EventTypeNormal, "AdmissionConfigReloaded", fmt.Sprintf("admission policies in force: %v", o.InForce()))
	return nil
}

// discard lets go of a set that never went in force: its policies that no other set
// holds close.
func (o *Policies) discard(ps *policySet) { ps.lease.Retire() }

// leaseOf holds policies for as long as their set is in force or a request uses it.
func leaseOf(policies []*Policy) *wasmhost.Set {
	loaded := make([]*wasmhost.Loaded, len(policies))
	for i, p := range policies {
		loaded[i] = p.loaded
	}
	return wasmhost.NewSet(loaded...)
}

// configRef is what reload Events are about: the API server has no object of its own,
// so they are filed on the kube-system namespace, beside the scheduler's.
func configRef() *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "kube-system", Namespace: "kube-system"}
}

func (o *Policies) event(ref *v1.ObjectReference, typ, reason, msg string) {
	if r := o.rec.Load(); r != nil {
		r.r.Event(ref, typ, reason, msg)
	}
}

// Run records Events through client (audit violations, reloads) and, with a config
// file, watches it and reloads on change, until ctx ends. Start it once the API server
// serves: Events are written through the API.
func (o *Policies) Run(ctx context.Context, client kubernetes.Interface) {
	if client != nil {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		rec := b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "wasmkube-admission"})
		o.rec.Store(&recorderBox{rec})
		defer func() {
			o.rec.Store(nil)
			b.Shutdown()
		}()
	}
	if o.opts.ConfigFile == "" {
		<-ctx.Done()
		return
	}
	o.watchConfig(ctx)
}

// Close retires the set in force: its instances and modules close after the requests
// that use it. Later requests see no policies. Call it once nothing takes new requests.
func (o *Policies) Close(ctx context.Context) {
	o.reloadMu.Lock()
	defer o.reloadMu.Unlock()
	o.staged.Close()
	o.set.Swap(&policySet{cfg: &Config{}, byName: map[string]*Policy{}, lease: wasmhost.NewSet()}).lease.Retire()
}

// watchConfig reloads the policies when the config file or a module it declares changes,
// as the scheduler does.
func (o *Policies) watchConfig(ctx context.Context) {
	configwatch.Run(ctx, configwatch.Options{
		What: "admission", File: o.opts.ConfigFile, Log: o.log, BuildHook: o.opts.buildHook,
		Modules: func() []string {
			var out []string
			for _, p := range o.set.Load().cfg.Policies {
				out = append(out, p.AbsPath(o.baseDir))
			}
			return out
		},
		Unchanged: func(data []byte) bool { return bytes.Equal(data, o.set.Load().raw) },
		Reload:    o.reload,
	})
}
