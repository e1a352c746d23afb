package runtime

import (
	"errors"
	"fmt"
)

// The runtime's errors are typed so that the pod worker and the probes decide by
// errors.Is and errors.As, never by an error's text.

// ErrNotFound is wrapped by errors about a sandbox, container or image that does not exist.
var ErrNotFound = errors.New("not found")

// ErrNotRunning is wrapped by errors about a container or sandbox that has to run for the
// call (an exec, a container joining its sandbox) and does not.
var ErrNotRunning = errors.New("not running")

// ErrTimeout is wrapped by an ExecSync whose command ran past its timeout (it was killed).
var ErrTimeout = errors.New("timed out")

// NetworkOp is the pod network step that failed.
type NetworkOp string

const (
	NetworkSetup    NetworkOp = "setup"    // CNI ADD for a new sandbox
	NetworkTeardown NetworkOp = "teardown" // CNI DEL and the namespace's removal
)

// NetworkError is a sandbox whose network could not be set up or torn down; Err is the
// network's own error (a CNI plugin's, a namespace's).
type NetworkError struct {
	Sandbox string
	Op      NetworkOp
	Err     error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("sandbox %s: network %s: %v", e.Sandbox, e.Op, e.Err)
}

func (e *NetworkError) Unwrap() error { return e.Err }
