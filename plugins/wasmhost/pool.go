package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// Pool is the instances of one plugin configuration. Calls run in parallel, one per
// instance, up to the pool's size; there is no lock around a call. An instance that
// traps, times out, exceeds its memory or passes a bad pointer is discarded and a fresh
// one is created on the next demand.
type Pool struct {
	m    *Module
	args []byte
	// slots holds idle instances and, for instances not created yet or discarded, nil
	// tokens: receiving a nil means "create one". Its capacity is the pool size, so the
	// number of live instances never exceeds it and a waiter is woken by either.
	slots  chan *instance
	closed atomic.Bool
	// created and discarded count instances over the pool's life; closedN counts the
	// instances closed (discarded, or closed with the pool), so created-closedN are live.
	created, discarded, closedN atomic.Int64
	// argsRead: a wasmkube_init of the pool read the args.
	argsRead atomic.Bool
}

// Stats returns how many instances the pool has created and discarded (after a trap,
// timeout, memory or pointer fault).
func (p *Pool) Stats() (created, discarded int64) { return p.created.Load(), p.discarded.Load() }

type instance struct {
	pool  *Pool
	mod   api.Module
	fns   map[*Kind]api.Function
	ctx   context.Context // carries the instance to host functions
	call  *Call
	idle  *Call
	stack [1]uint64
	sink  *logSink
	// mem is the instance's linear memory (nil for a module without one).
	mem *instanceMemory

	// Deadline mode (nil in context mode): the flag, and which call may raise it.
	deadline api.MutableGlobal
	// growFailed is set by the guest when one of its memory.grow returned -1 (deadline
	// mode only; nil otherwise).
	growFailed api.MutableGlobal
	mu         sync.Mutex
	gen        uint64
	active     uint64
	hit        FailureReason
	timer      *time.Timer
	expiresAt  time.Time
}

// NewPool makes a pool of up to size instances for the plugin with the given args (JSON,
// may be nil). It creates the first instance at once and runs the guest's wasmkube_init,
// so that bad args fail here, with the plugin's reason.
func (m *Module) NewPool(ctx context.Context, args []byte, size int) (*Pool, error) {
	if size < 1 {
		size = 1
	}
	p := &Pool{m: m, args: args, slots: make(chan *instance, size)}
	inst, err := p.newInstance(ctx)
	if err != nil {
		return nil, &LoadError{Plugin: m.name, Path: m.path, Err: err}
	}
	p.slots <- inst
	for i := 1; i < size; i++ {
		p.slots <- nil
	}
	return p, nil
}

// CountFailure counts a failure the adapter found in a call's results (a per-node error)
// in wasmkube_plugin_failures_total.
func (p *Pool) CountFailure(k *Kind) { p.m.host.CountFailure(p.m.name, k) }

// InitReadArgs reports whether the module's wasmkube_init read the args (a plugin that
// takes none need not check them).
func (p *Pool) InitReadArgs() bool { return p.argsRead.Load() }

// Module returns the module the pool runs.
func (p *Pool) Module() *Module { return p.m }

// Size is the maximum number of instances (and of parallel calls).
func (p *Pool) Size() int { return cap(p.slots) }

// newInstance instantiates the module, runs its _initialize, checks the version marker
// and runs wasmkube_init, each under a time limit.
func (p *Pool) newInstance(ctx context.Context) (*instance, error) {
	m := p.m
	sink := &logSink{log: m.host.log, plugin: m.name}
	inst := &instance{pool: p, sink: sink}
	// The host's own calls (start, version, init) and the time between calls have no kind.
	inst.idle = &Call{inst: inst}
	inst.call = inst.idle
	inst.ctx = context.WithValue(context.Background(), instKey{}, inst)
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStdout(&lineWriter{sink: sink, level: slog.LevelInfo}).
		WithStderr(&lineWriter{sink: sink, level: slog.LevelWarn})
	// Start code (a language runtime's initialization), the version marker and
	// wasmkube_init get a generous multiple of the call limit: they run once per instance,
	// and the limit is wall-clock time, which a loaded machine can spend on other threads
	// (a version marker that returns a constant was seen to exceed 100 ms under load 25,
	// and the module then failed to load).
	startLimit := 10*m.timeout + time.Second
	if m.interrupt == InterruptDeadline {
		// _initialize is called below, once the deadline flag can be raised.
		cfg = cfg.WithStartFunctions()
	} else {
		cfg = cfg.WithStartFunctions("_initialize")
	}
	alloc := experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
		inst.mem = newInstanceMemory(capacity, max, m.host.heapMemory)
		return inst.mem
	})
	sctx, cancel := context.WithTimeout(experimental.WithMemoryAllocator(inst.withCaller(ctx), alloc), startLimit)
	defer cancel()
	mod, err := m.rt.InstantiateModule(sctx, m.compiled, cfg)
	sink.endCall()
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	inst.mod = mod
	p.created.Add(1)
	fail := func(err error) (*instance, error) { p.closeInst(inst); return nil, err }
	run := func(name string, limit time.Duration) (int32, error) {
		var stack [1]uint64
		inst.mem.enter()
		err, hit := inst.run(ctx, mod.ExportedFunction(name), stack[:], limit)
		inst.mem.leave()
		sink.endCall()
		if hit == ReasonTimeout {
			return 0, fmt.Errorf("%s: exceeded its time limit of %s", name, limit)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, firstLine(err))
		}
		return int32(stack[0]), nil
	}
	if m.interrupt == InterruptDeadline {
		g, ok := mod.ExportedGlobal(deadlineExport).(api.MutableGlobal)
		if !ok {
			return fail(errors.New("instrumented module lost its deadline global"))
		}
		inst.deadline = g
		if gf, ok := mod.ExportedGlobal(growFailedExport).(api.MutableGlobal); ok {
			inst.growFailed = gf
		}
		if mod.ExportedFunction("_initialize") != nil {
			if _, err := run("_initialize", startLimit); err != nil {
				return fail(err)
			}
		}
	}
	v, err := run(versionExport, startLimit)
	if err != nil {
		return fail(err)
	}
	if v != ABIVersion {
		return fail(fmt.Errorf("exports %s %d, this host supports %d: %w", versionExport, v, ABIVersion, ErrABIVersion))
	}
	inst.fns = make(map[*Kind]api.Function, len(m.kinds))
	for _, k := range m.kinds {
		inst.fns[k] = mod.ExportedFunction(k.Export)
	}
	if m.hasInit && p.slots != nil { // not for the probe instance of Load: args come with a pool
		inst.call = &Call{inst: inst}
		code, err := run(initExport, startLimit)
		if inst.call.argsRead {
			p.argsRead.Store(true)
		}
		if err != nil {
			return fail(err)
		}
		if code != 0 {
			reason := inst.call.Reason
			if reason == "" {
				reason = "no reason given"
			}
			return fail(fmt.Errorf("%s rejected the plugin (code %d): %s", initExport, code, reason))
		}
	}
	return inst, nil
}

// run calls fn under limit and the caller's ctx. hit tells whether the call was
// interrupted, and why (ReasonTimeout or ReasonCanceled); it is empty otherwise.
//
// Deadline mode: a timer (and, for a cancellable ctx, a context.AfterFunc) raises the
// instance's deadline flag; the guest traps at its next loop header. The call itself gets
// the instance's constant context, so a call costs no context allocation.
func (inst *instance) run(ctx context.Context, fn api.Function, stack []uint64, limit time.Duration) (err error, hit FailureReason) {
	if inst.deadline == nil {
		expires := time.Now().Add(limit)
		cctx, cancel := context.WithDeadline(inst.withCaller(ctx), expires)
		defer cancel()
		err = fn.CallWithStack(cctx, stack)
		var exit *sys.ExitError
		if errors.As(err, &exit) && (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) {
			if ctx.Err() != nil {
				return err, ReasonCanceled
			}
			return err, ReasonTimeout
		}
		// As in deadline mode below: the context's timer may not have run yet when a call
		// that never reached a check returns late, so the clock decides.
		if err == nil && ctx.Err() == nil && (errors.Is(cctx.Err(), context.DeadlineExceeded) || !time.Now().Before(expires)) {
			return errOverran, ReasonTimeout
		}
		return err, ""
	}
	if ctx.Err() != nil {
		return ctx.Err(), ReasonCanceled
	}
	inst.mu.Lock()
	inst.gen++
	gen := inst.gen
	inst.active = gen
	expires := time.Now().Add(limit)
	inst.expiresAt = expires
	inst.mu.Unlock()
	// One timer per instance, re-armed per call: a call allocates no timer.
	if inst.timer == nil {
		inst.timer = time.AfterFunc(limit, inst.onTimer)
	} else {
		inst.timer.Reset(limit)
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { inst.expire(gen, ReasonCanceled) })
	}
	err = fn.CallWithStack(inst.ctx, stack)
	inst.timer.Stop()
	if stop != nil {
		stop()
	}
	inst.mu.Lock()
	inst.active = 0
	hit, inst.hit = inst.hit, ""
	inst.mu.Unlock()
	if hit != "" {
		inst.deadline.Set(0)
		if err == nil && hit != ReasonTimeout {
			hit = "" // the caller gave up just as the call finished: the result stands
		}
	}
	// A call that finished before reaching a check, but late, is a timeout too: the limit
	// is on the call, not on its loops (straight-line code, memory.grow and bulk memory
	// instructions take long without looping). The clock is read here because the timer
	// may not have run yet: machine code without checks cannot be preempted, and a pending
	// stop-the-world holds every other goroutine, timers included, until it returns.
	if err == nil && (hit == ReasonTimeout || !time.Now().Before(expires)) {
		return errOverran, ReasonTimeout
	}
	return err, hit
}

// errOverran is the error of a call that returned after its time limit without reaching
// a deadline check.
var errOverran = errors.New("returned after its time limit")

// onTimer is the instance's timer: it expires the running call if its time is up. A timer
// armed for an earlier call may fire late, while a later call runs; the time check makes
// it harmless (the later call's own arming fires when that call's time is up).
func (inst *instance) onTimer() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.active != 0 && !time.Now().Before(inst.expiresAt) {
		inst.hit = ReasonTimeout
		inst.deadline.Set(1)
	}
}

// expire raises the deadline flag if call gen is still running.
func (inst *instance) expire(gen uint64, why FailureReason) {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.active == gen {
		inst.hit = why
		inst.deadline.Set(1)
	}
}

// withCaller returns a context that carries the instance and is cancelled with parent.
func (inst *instance) withCaller(parent context.Context) context.Context {
	return context.WithValue(parent, instKey{}, inst)
}

// Do runs one entry-point call: c.Kind on an idle instance, with c's data, under the
// plugin's time limit. On return c holds the outputs. A non-nil error is a *CallError;
// failures (not cancellations) have been logged and counted in Failures.
func (p *Pool) Do(ctx context.Context, c *Call) error {
	c.reset()
	if !p.m.kinds.Has(c.Kind) {
		return &CallError{Plugin: p.m.name, Kind: c.Kind, Reason: ReasonGarbage, Err: fmt.Errorf("module does not export %s", c.Kind.Export)}
	}
	inst, err := p.acquire(ctx, c.Wait)
	if err != nil {
		reason := reasonOf(err, ctx)
		if errors.Is(err, errWaited) {
			reason = ReasonCanceled // as if the caller had given up: not the plugin's failure
		}
		return p.failed(&CallError{Plugin: p.m.name, Kind: c.Kind, Reason: reason, Err: err})
	}
	cerr, discard := inst.invoke(ctx, c)
	if discard || p.closed.Load() {
		if discard {
			p.discarded.Add(1)
		}
		p.closeInst(inst)
		p.slots <- nil
	} else {
		p.slots <- inst
		// Close may have run between the check above and the send: its drain then missed
		// this instance, so close what is idle here (Close stores closed before draining,
		// so one of the two drains sees the instance).
		if p.closed.Load() {
			p.drainIdle()
		}
	}
	if cerr != nil {
		return p.failed(cerr)
	}
	return nil
}

func (p *Pool) failed(e *CallError) error {
	if e.Reason != ReasonCanceled {
		p.m.host.CountFailure(p.m.name, e.Kind)
		p.m.host.log.Warn("wasm plugin call failed", "plugin", p.m.name, "kind", e.Kind.String(), "reason", string(e.Reason), "err", e.Err)
	}
	return e
}

var errPoolClosed = errors.New("plugin was closed (replaced by a config change)")

// Close closes the pool's idle instances; instances in use are closed when their call
// returns, and later calls fail. The module stays usable for other pools.
func (p *Pool) Close() {
	p.closed.Store(true)
	p.drainIdle()
}

// drainIdle closes the idle instances, leaving their slots empty (nil).
func (p *Pool) drainIdle() {
	for range cap(p.slots) {
		select {
		case inst := <-p.slots:
			if inst != nil {
				p.closeInst(inst)
			}
			defer func() { p.slots <- nil }()
		default:
		}
	}
}

// closeInst closes an instance of the pool.
func (p *Pool) closeInst(inst *instance) {
	_ = inst.mod.Close(context.Background())
	p.closedN.Add(1)
}

// Live is how many instances of the pool exist (idle or in a call).
func (p *Pool) Live() int64 { return p.created.Load() - p.closedN.Load() }

// errWaited is acquire's error when no instance became idle within the call's Wait.
var errWaited = errors.New("no idle instance within the wait")

// acquire returns an idle instance, creating one for a free slot. It waits for one as long
// as ctx allows and, when wait is set, at most wait; the timer is made only when the call
// has to wait, not for every call.
func (p *Pool) acquire(ctx context.Context, wait time.Duration) (*instance, error) {
	var inst *instance
	select {
	case inst = <-p.slots:
	default:
		var expired <-chan time.Time
		if wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			expired = t.C
		}
		select {
		case inst = <-p.slots:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-expired:
			return nil, errWaited
		}
	}
	if p.closed.Load() {
		if inst != nil {
			p.closeInst(inst)
		}
		p.slots <- nil
		return nil, errPoolClosed
	}
	if inst != nil {
		return inst, nil
	}
	inst, err := p.newInstance(ctx)
	if err != nil {
		p.slots <- nil
		return nil, err
	}
	return inst, nil
}

// invoke calls the entry point; discard reports whether the instance must be replaced.
func (inst *instance) invoke(ctx context.Context, c *Call) (_ *CallError, discard bool) {
	p := inst.pool
	// The memory stays mapped until the call, and the reads of its results, are done.
	inst.mem.enter()
	defer inst.mem.leave()
	c.inst = inst
	inst.call = c
	defer func() { inst.call = inst.idle }()
	stack := inst.stack[:]
	if c.Kind.Batched {
		stack[0] = uint64(uint32(c.Count))
	} else {
		stack[0] = 0
	}
	limit := p.m.timeout
	if c.Timeout > 0 {
		limit = c.Timeout
	}
	c.caller, c.deadline = ctx, time.Now().Add(limit)
	err, hit := inst.run(ctx, inst.fns[c.Kind], stack, limit)
	c.release()
	inst.sink.endCall()
	growFailed := inst.growFailed != nil && inst.growFailed.Get() != 0
	if growFailed {
		inst.growFailed.Set(0) // a refused grow of this call is not blamed on a later one
	}
	if err != nil {
		reason := hit
		if reason == "" || growFailed {
			// A refused grow ends a rewritten module's call at once; one that also ran
			// late is still a memory-limit failure: the limit is what stopped it.
			reason = inst.classify(err, growFailed)
		}
		return &CallError{Plugin: p.m.name, Kind: c.Kind, Reason: reason, Err: trimTrace(err, reason, p.m, limit)}, true
	}
	c.Code = int32(stack[0])
	if err := c.checkResults(); err != nil {
		return &CallError{Plugin: p.m.name, Kind: c.Kind, Reason: ReasonGarbage, Err: err}, false
	}
	if c.Code == CodeError {
		reason := c.Reason
		if reason == "" {
			reason = "plugin returned Error without a reason"
		}
		return &CallError{Plugin: p.m.name, Kind: c.Kind, Reason: ReasonError, Err: errors.New(reason)}, false
	}
	return nil, false
}

// classify maps a failed call to a FailureReason (docs/abi.md section 7).
func (inst *instance) classify(err error, growFailed bool) FailureReason {
	var bp *badPointerError
	var ge *garbageError
	var exit *sys.ExitError
	switch {
	case errors.As(err, &bp):
		return ReasonBadPointer
	case errors.As(err, &ge):
		return ReasonGarbage
	}
	// A language runtime that cannot grow its heap aborts (trap or proc_exit). A rewritten
	// module says exactly whether a grow was refused during the call; for the others, what
	// tells the cause is a memory close to its limit (within an eighth: runtimes grow in
	// chunks, so the last failed request may have been far smaller than what was left).
	if growFailed {
		return ReasonMemory
	}
	if mem := inst.mod.Memory(); mem != nil && uint64(mem.Size())+max(pageSize, inst.pool.m.memLimit/8) > inst.pool.m.memLimit {
		return ReasonMemory
	}
	if errors.As(err, &exit) {
		return ReasonExit
	}
	return ReasonTrap
}

// trimTrace keeps the first line of wazero's error (the wasm stack trace is for
// debugging, not for "0/5 nodes are available" messages) and adds the limit that was hit.
func trimTrace(err error, reason FailureReason, m *Module, limit time.Duration) error {
	switch reason {
	case ReasonTimeout:
		return fmt.Errorf("call exceeded its time limit of %s", limit)
	case ReasonMemory:
		return fmt.Errorf("instance reached its memory limit of %d bytes: %w", m.memLimit, firstLine(err))
	}
	return firstLine(err)
}

type lineErr struct {
	msg string
	err error
}

func (e *lineErr) Error() string { return e.msg }
func (e *lineErr) Unwrap() error { return e.err }

func firstLine(err error) error {
	s := err.Error()
	msg := s
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		msg = s[:i]
	}
	msg = strings.TrimSuffix(msg, " (recovered by wazero)")
	if msg == s {
		return err
	}
	return &lineErr{msg: msg, err: err}
}

func reasonOf(_ error, ctx context.Context) FailureReason {
	if ctx.Err() != nil {
		return ReasonCanceled
	}
	return ReasonTrap
}

// IdleMemory returns the linear memory sizes, in bytes, of the pool's idle instances (the
// kit watches them for leaks across calls). Instances in a call are not counted.
func (p *Pool) IdleMemory() []uint64 {
	var taken []*instance
	var sizes []uint64
	for range cap(p.slots) {
		select {
		case inst := <-p.slots:
			taken = append(taken, inst)
			if inst != nil && inst.mod.Memory() != nil {
				sizes = append(sizes, uint64(inst.mod.Memory().Size()))
			}
			continue
		default:
		}
		break
	}
	for _, inst := range taken {
		p.slots <- inst
	}
	return sizes
}
