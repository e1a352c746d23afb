package sdk

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// A host function's -errno becomes an error that names the request and matches its Errno.
func TestCodeError(t *testing.T) {
	tests := []struct {
		code int32
		is   error
		msg  string
	}{
		{-111, ECONNREFUSED, "GET :8080/health: connection refused"},
		{-110, ETIMEDOUT, "GET :8080/health: timed out (the call's time limit)"},
		{-22, EINVAL, "GET :8080/health: invalid port or path"},
		{-13, EACCES, "GET :8080/health: the pod has no IP yet"},
		{-2, ErrUnavailable, "GET :8080/health: not available in this kind of call"},
		{-99, Errno(99), "GET :8080/health: errno 99"},
	}
	for _, tt := range tests {
		err := codeError("GET", 8080, "/health", tt.code)
		if !errors.Is(err, tt.is) || err.Error() != tt.msg {
			t.Errorf("code %d: %q, want %q matching %v", tt.code, err, tt.msg, tt.is)
		}
	}
	var errno Errno
	if err := codeError("connect", 5432, "", -110); !errors.As(err, &errno) || !errno.Timeout() || err.Error() != "connect :5432: timed out (the call's time limit)" {
		t.Errorf("connect timeout: %v (errno %d)", err, errno)
	}
}

// Ports outside 1..65535 fail in the guest, before an int could wrap around to a valid
// i32 port; the host is never called (natively it would panic).
func TestInvalidPortsNeverReachTheHost(t *testing.T) {
	for _, port := range []int{0, -1, 65536, 1<<32 + 8080} {
		if _, err := HTTPGet(port, "/"); !errors.Is(err, EINVAL) {
			t.Errorf("HTTPGet(%d): %v, want EINVAL", port, err)
		}
		if _, err := HTTPPost(port, "/", nil); !errors.Is(err, EINVAL) {
			t.Errorf("HTTPPost(%d): %v, want EINVAL", port, err)
		}
		if err := TCPConnect(port); !errors.Is(err, EINVAL) {
			t.Errorf("TCPConnect(%d): %v, want EINVAL", port, err)
		}
	}
}

func TestSleepMillis(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int32
	}{
		{-time.Second, 0},
		{0, 0},
		{time.Nanosecond, 1},
		{time.Millisecond, 1},
		{1500 * time.Microsecond, 2},
		{500 * time.Millisecond, 500},
		{math.MaxInt64, math.MaxInt32},
	}
	for _, tt := range tests {
		if got := sleepMillis(tt.d); got != tt.want {
			t.Errorf("sleepMillis(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// Only the call's last response can be read: an earlier one, one from a previous call and
// the zero Response read as empty without asking the host (natively it would panic).
func TestStaleResponsesReadEmpty(t *testing.T) {
	BeginCall()
	first, err := httpResult("GET", 80, "/a", 200)
	if err != nil || first.Status != 200 || !first.current() {
		t.Fatalf("first response: %+v, %v", first, err)
	}
	second, _ := httpResult("GET", 80, "/b", 503)
	if first.current() || !second.current() {
		t.Errorf("after a second request: first current=%v, second current=%v", first.current(), second.current())
	}
	if _, err := httpResult("GET", 80, "/c", -111); !errors.Is(err, ECONNREFUSED) || second.current() {
		t.Errorf("a failed request: err %v, earlier response current=%v", err, second.current())
	}
	third, _ := httpResult("GET", 80, "/d", 204)
	abi.BeginCall()
	for name, r := range map[string]Response{"earlier": first, "previous call": third, "zero": {}} {
		if r.Body() != nil || r.Header("Location") != "" {
			t.Errorf("%s response read something", name)
		}
	}
}
