package wasmhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// ABIVersion is the ABI version this host implements.
const ABIVersion = 1

const (
	versionExport = "wasmkube_abi_version"
	initExport    = "wasmkube_init"
	wasiModule    = wasi_snapshot_preview1.ModuleName
	pageSize      = 65536
)

// LoadOptions describe one plugin module.
type LoadOptions struct {
	// Name is the plugin's name, used in logs, metrics, errors and cycle-state keys.
	Name string
	// Path is the module file; it is read unless Wasm is set (then it only names it).
	Path string
	Wasm []byte
	// Timeout is the time limit of one entry-point call (a batch is one call); 0: 100ms.
	Timeout time.Duration
	// MemoryLimit caps each instance's linear memory, in bytes; 0: 64Mi.
	MemoryLimit uint64
	// Capabilities are the grants of the plugin's config: a module may import a host
	// function that needs a capability (HostFunc.Capability) only when it is listed here.
	Capabilities []string

	// contextInterrupt skips the rewriting (benchmarks compare the two ways).
	contextInterrupt bool
}

// Module is a compiled plugin that passed the ABI checks. Pools made from it share its
// machine code; each pool has its own instances. Modules of the same bytes and memory
// limit share one compiled module (the host's cache by content hash), whatever their
// plugin's name, time limit or grants.
type Module struct {
	host      *Host
	name      string
	path      string
	rt        wazero.Runtime
	compiled  wazero.CompiledModule
	kinds     Kinds
	caps      []string
	hasInit   bool
	timeout   time.Duration
	memLimit  uint64
	interrupt Interrupt
	ref       *moduleRef
}

// Interrupt is how calls of a module are stopped at their time limit.
type Interrupt string

const (
	// InterruptDeadline: the module was rewritten to check a deadline flag at every loop
	// header; the host raises the flag when the limit passes. Costs about a nanosecond per
	// loop iteration.
	InterruptDeadline Interrupt = "deadline-flag"
	// InterruptContext: wazero's WithCloseOnContextDone, for modules that cannot be
	// rewritten. Correct, but it makes guest code several times slower.
	InterruptContext Interrupt = "context"
)

// Interrupt reports how the module's calls are stopped at their time limit.
func (m *Module) Interrupt() Interrupt { return m.interrupt }

// Load compiles a module and checks it against ABI v1: imports only from wasmkube and
// wasi_snapshot_preview1, an exported memory, the version marker returning 1, and the
// signatures of the entry points it exports. It instantiates the module once to ask its
// version. Every error is a *LoadError naming the plugin and path.
func (h *Host) Load(ctx context.Context, o LoadOptions) (*Module, error) {
	fail := func(err error) (*Module, error) { return nil, &LoadError{Plugin: o.Name, Path: o.Path, Err: err} }
	if o.Name == "" {
		return fail(errors.New("plugin has no name"))
	}
	bin := o.Wasm
	if bin == nil {
		b, err := os.ReadFile(o.Path)
		if err != nil {
			return fail(err)
		}
		bin = b
	}
	if !bytes.HasPrefix(bin, []byte("\x00asm")) {
		return fail(errors.New("not a WebAssembly module (no \\0asm header)"))
	}
	m := &Module{host: h, name: o.Name, path: o.Path, timeout: o.Timeout, memLimit: o.MemoryLimit, caps: o.Capabilities}
	if m.timeout <= 0 {
		m.timeout = DefaultTimeout
	}
	if m.memLimit == 0 {
		m.memLimit = DefaultMemoryLimit
	}
	pages := m.memLimit / pageSize
	if pages < 1 || pages > 65536 {
		return fail(fmt.Errorf("memoryLimit %d bytes: must be between 64Ki and 4Gi", m.memLimit))
	}
	cm, err := h.modules.acquire(moduleKey{sum: sha256.Sum256(bin), pages: pages, contextInterrupt: o.contextInterrupt},
		func() (*compiledModule, error) { return h.compile(ctx, m, bin, pages, o.contextInterrupt) })
	if err != nil {
		return fail(err)
	}
	m.rt, m.compiled, m.kinds, m.hasInit, m.interrupt = cm.rt, cm.compiled, cm.kinds, cm.hasInit, cm.interrupt
	m.ref = &moduleRef{cache: &h.modules, cm: cm}
	// The compiled module was checked against the ABI once; the grants are this plugin's.
	if err := h.abi.checkImports(cm.compiled, m.caps); err != nil {
		m.ref.release()
		return fail(err)
	}
	// A module nobody closes (a plugin dropped by a config swap) lets go of the compiled
	// module with its last user.
	runtime.AddCleanup(m, (*moduleRef).release, m.ref)
	return m, nil
}

// compile rewrites, compiles and checks bin in a runtime of its own (docs/plugins.md, "One
// runtime per module"): wazero's memory limit is per runtime, and closing the runtime
// frees the code and every instance at once. Machine code is still shared through the
// host's compilation cache.
//
// Time limits: a module rewritten by instrument checks a deadline flag at every loop
// header (a load and a branch); one that cannot be rewritten runs with wazero's
// WithCloseOnContextDone, which costs an indirect call at every loop header and a
// goroutine per call (docs/plugins.md, "Time limits").
func (h *Host) compile(ctx context.Context, m *Module, bin []byte, pages uint64, contextInterrupt bool) (*compiledModule, error) {
	s := &Module{host: h, name: m.name, path: m.path, timeout: m.timeout, memLimit: m.memLimit, caps: h.abi.allCaps}
	rewritten, err := instrument(bin)
	if contextInterrupt {
		err = errors.New("context interruption requested")
	}
	if err == nil {
		s.interrupt = InterruptDeadline
		err = s.setup(ctx, rewritten, pages)
		if err == nil {
			return &compiledModule{rt: s.rt, compiled: s.compiled, kinds: s.kinds, hasInit: s.hasInit, interrupt: s.interrupt}, nil
		}
		// The rewritten module failed: report the original module's own errors.
		h.log.Debug("wasm plugin: instrumented module rejected, falling back to context interruption", "plugin", m.name, "err", err)
	} else {
		h.log.Debug("wasm plugin: not instrumented, falling back to context interruption", "plugin", m.name, "err", err)
	}
	s.interrupt = InterruptContext
	if err := s.setup(ctx, bin, pages); err != nil {
		return nil, err
	}
	return &compiledModule{rt: s.rt, compiled: s.compiled, kinds: s.kinds, hasInit: s.hasInit, interrupt: s.interrupt}, nil
}

// setup makes the module's runtime and compiles bin in it; on error the runtime is closed.
func (m *Module) setup(ctx context.Context, bin []byte, pages uint64) (err error) {
	// No DWARF: wazero would symbolize every trap's stack trace from it (about 300ms per
	// trap for a Rust std module), and only the trace's first line is ever reported.
	cfg := wazero.NewRuntimeConfig().
		WithDebugInfoEnabled(false).
		WithCompilationCache(m.host.cache).
		WithCloseOnContextDone(m.interrupt == InterruptContext).
		WithMemoryLimitPages(uint32(pages))
	m.rt = wazero.NewRuntimeWithConfig(ctx, cfg)
	defer func() {
		if err != nil {
			_ = m.rt.Close(ctx)
		}
	}()
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, m.rt); err != nil {
		return fmt.Errorf("wasi: %w", err)
	}
	if err := m.host.abi.instantiateHostModule(ctx, m.rt); err != nil {
		return fmt.Errorf("host module: %w", err)
	}
	compiled, err := m.rt.CompileModule(ctx, bin)
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	m.compiled = compiled
	if err := m.host.abi.checkImports(compiled, m.caps); err != nil {
		return err
	}
	kinds, hasInit, err := m.host.abi.checkExports(compiled)
	if err != nil {
		return err
	}
	m.kinds, m.hasInit = kinds, hasInit
	// Instantiate once to run its start code and ask its ABI version.
	p := &Pool{m: m}
	inst, err := p.newInstance(ctx)
	if err != nil {
		return err
	}
	_ = inst.mod.Close(ctx)
	return nil
}

// checkImports allows functions from wasmkube (by name, and only those whose capability
// the config grants) and wasi_snapshot_preview1, and nothing else: a plugin defines its
// own memory and table.
func (a *abi) checkImports(c wazero.CompiledModule, caps []string) error {
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case HostModule:
			hf, ok := a.byName[name]
			if !ok {
				return fmt.Errorf("imports %s.%s, which ABI v%d does not define for the kinds this host runs (%s)", mod, name, ABIVersion, strings.Join(a.names, ", "))
			}
			if hf.Capability != "" && !slices.Contains(caps, hf.Capability) {
				return fmt.Errorf("imports %s.%s, which needs capability %q: the plugin's config does not grant it (capabilities: [%s])",
					mod, name, hf.Capability, hf.Capability)
			}
			if !slices.Equal(f.ParamTypes(), hf.Params) || !slices.Equal(f.ResultTypes(), hf.Results) {
				return fmt.Errorf("imports %s.%s with signature %s, ABI v%d defines %s", mod, name,
					sig(f.ParamTypes(), f.ResultTypes()), ABIVersion, sig(hf.Params, hf.Results))
			}
		case wasiModule:
		default:
			return fmt.Errorf("imports %s.%s: plugins may import only from %q and %q", mod, name, HostModule, wasiModule)
		}
	}
	for _, mem := range c.ImportedMemories() {
		mod, name, _ := mem.Import()
		return fmt.Errorf("imports memory %s.%s: a plugin must define and export its own memory", mod, name)
	}
	return nil
}

// checkExports finds the version marker, the entry points and their signatures.
func (a *abi) checkExports(c wazero.CompiledModule) (Kinds, bool, error) {
	if _, ok := c.ExportedMemories()["memory"]; !ok {
		return nil, false, errors.New(`does not export its memory as "memory"`)
	}
	fns := c.ExportedFunctions()
	v, ok := fns[versionExport]
	if !ok {
		return nil, false, fmt.Errorf("does not export %s: not a wasmkube plugin", versionExport)
	}
	if err := checkSig(v, nil, []api.ValueType{i32}); err != nil {
		return nil, false, err
	}
	var hasInit bool
	if f, ok := fns[initExport]; ok {
		if err := checkSig(f, nil, []api.ValueType{i32}); err != nil {
			return nil, false, err
		}
		hasInit = true
	}
	var kinds Kinds
	for _, k := range a.kinds {
		f, ok := fns[k.Export]
		if !ok {
			continue
		}
		if err := checkSig(f, k.params(), []api.ValueType{i32}); err != nil {
			return nil, false, err
		}
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		var names []string
		for _, k := range a.kinds {
			names = append(names, k.Export)
		}
		return nil, false, fmt.Errorf("exports no entry point this host runs (%s; see docs/abi.md)", strings.Join(names, ", "))
	}
	return kinds, hasInit, nil
}

func checkSig(f api.FunctionDefinition, params, results []api.ValueType) error {
	if !slices.Equal(f.ParamTypes(), params) || !slices.Equal(f.ResultTypes(), results) {
		return fmt.Errorf("export %s has signature %s, ABI v%d requires %s", f.ExportNames()[0],
			sig(f.ParamTypes(), f.ResultTypes()), ABIVersion, sig(params, results))
	}
	return nil
}

func sig(params, results []api.ValueType) string {
	name := func(ts []api.ValueType) string {
		s := "("
		for i, t := range ts {
			if i > 0 {
				s += ", "
			}
			s += api.ValueTypeName(t)
		}
		return s + ")"
	}
	return name(params) + " -> " + name(results)
}

// Name is the plugin's name.
func (m *Module) Name() string { return m.name }

// Path is the module file.
func (m *Module) Path() string { return m.path }

// Kinds are the entry points the module exports.
func (m *Module) Kinds() Kinds { return m.kinds }

// Timeout is the per-call time limit.
func (m *Module) Timeout() time.Duration { return m.timeout }

// Host is the host the module was loaded on.
func (m *Module) Host() *Host { return m.host }

// Close lets go of the module's compiled code: once no module of the same bytes uses it,
// it stays in the host's cache of recently used modules (a swap back to it compiles
// nothing) until newer ones push it out, which frees the code and every instance made
// from it. Close the module's pools first.
func (m *Module) Close(ctx context.Context) error {
	m.ref.release()
	return nil
}

// Share returns another reference to the module's compiled code, closed on its own: a
// plugin that owns its module (a Loaded) takes one, so that closing it never takes the
// code from under another plugin of the same module. It compiles and checks nothing.
func (m *Module) Share() *Module {
	s := *m
	m.host.modules.ref(m.ref.cm)
	s.ref = &moduleRef{cache: &m.host.modules, cm: m.ref.cm}
	runtime.AddCleanup(&s, (*moduleRef).release, s.ref)
	return &s
}

// HasInit reports whether the module exports wasmkube_init (its args are checked at load).
func (m *Module) HasInit() bool { return m.hasInit }
