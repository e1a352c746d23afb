package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// Callers decide by the runtime's error types, whatever wraps them.
func TestTypedErrors(t *testing.T) {
	f := runtime.NewFake("busybox")
	if _, err := f.ExecSync(context.Background(), "gone", []string{"true"}, time.Second); !errors.Is(err, runtime.ErrNotRunning) {
		t.Errorf("exec in a missing container: %v, want runtime.ErrNotRunning", err)
	}
	if err := f.StartContainer(context.Background(), "gone"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("start of a missing container: %v, want runtime.ErrNotFound", err)
	}
	cause := errors.New("plugin bridge: address in use")
	err := fmt.Errorf("run pod sandbox: %w", &runtime.NetworkError{Sandbox: "sb1", Op: runtime.NetworkSetup, Err: cause})
	var ne *runtime.NetworkError
	if !errors.As(err, &ne) || ne.Op != runtime.NetworkSetup || ne.Sandbox != "sb1" || !errors.Is(err, cause) {
		t.Errorf("errors.As(%v) = %+v: want the network setup of sb1, wrapping its cause", err, ne)
	}
	if got, want := ne.Error(), "sandbox sb1: network setup: plugin bridge: address in use"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
