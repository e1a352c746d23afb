package wasmhost

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Call is one entry-point call. The adapter that drives the kind puts its inputs (and
// where its host functions write outputs) in Data; the host fills Code and Reason. A Call
// is used by one goroutine; reuse it only after Do returned.
type Call struct {
	Kind *Kind
	// Count is the batch size passed to a batched entry point.
	Count int
	// Data is the adapter's call data, read by its host functions.
	Data any
	// Timeout, when set, is this call's time limit instead of the module's (a probe's
	// timeoutSeconds, what is left of a grace period).
	Timeout time.Duration
	// Wait, when set, is the longest Do waits for an idle instance; then it fails as
	// ReasonCanceled (the caller's context still ends the wait sooner). A bound given
	// here costs a timer only when every instance is busy, where a context with a
	// timeout around Do costs one on every call.
	Wait time.Duration

	// Code is the status code the entry point returned.
	Code int32
	// Reason is the reason set with status_reason.
	Reason string

	garbage  error
	argsRead bool
	inst     *instance
	caller   context.Context
	deadline time.Time
	ctx      context.Context
	cancel   context.CancelFunc
}

// Deadline is when the running call's time limit passes.
func (c *Call) Deadline() time.Time { return c.deadline }

// Context is done when the running call's time limit passes or its caller gives up: host
// functions that wait (network, sleep) wait under it, so that a guest blocked in the host
// still returns on time.
func (c *Call) Context() context.Context {
	if c.ctx == nil {
		parent := c.caller
		if parent == nil {
			parent = context.Background()
		}
		c.ctx, c.cancel = context.WithDeadline(parent, c.deadline)
	}
	return c.ctx
}

// release ends the call's Context.
func (c *Call) release() {
	if c.cancel != nil {
		c.cancel()
	}
	c.ctx, c.cancel, c.caller = nil, nil, nil
}

// SetGarbage records a contract violation of the guest (a result function called with
// nonsense); the call then fails as a garbage result, and the instance is kept.
func (c *Call) SetGarbage(msg string) {
	if c.garbage == nil {
		c.garbage = &garbageError{msg: msg}
	}
}

// Plugin is the name of the plugin the call runs.
func (c *Call) Plugin() string { return c.inst.pool.m.name }

// Objects is the host's cache of objects serialized as JSON.
func (c *Call) Objects() *ObjectCache { return &c.inst.pool.m.host.objects }

// Args is the plugin's args (JSON, nil when none were given).
func (c *Call) Args() []byte { return c.inst.pool.args }

// reset clears the host's outputs so that a Call can be reused.
func (c *Call) reset() { c.Code, c.Reason, c.garbage = 0, "", nil }

// checkResults validates what the guest returned: the code must be allowed for the kind,
// and the kind's own check must pass.
func (c *Call) checkResults() error {
	if c.garbage != nil {
		return c.garbage
	}
	if !c.Kind.Allowed(c.Code) {
		return &garbageError{msg: "entry point " + c.Kind.Export + " returned status code " + strconv.Itoa(int(c.Code)) + ", not allowed for " + c.Kind.Name}
	}
	if c.Code == CodeSuccess && c.Kind.Check != nil {
		if err := c.Kind.Check(c); err != nil {
			var ge *garbageError
			if errors.As(err, &ge) {
				return ge
			}
			return &garbageError{msg: err.Error()}
		}
	}
	return nil
}
