package wasmtest

import (
	"errors"
	"strings"
	"testing"
)

// A leak is reported as a leak whatever ended the calls: a timeout or a memory limit after
// memory grew is the leak's consequence; a failure without growth is reported as itself.
func TestLeakFinding(t *testing.T) {
	grow := []memMark{{1, 4 << 20}, {2500, 6 << 20}, {5000, 8 << 20}, {7500, 10 << 20}}
	flat := []memMark{{1, 4 << 20}, {2500, 4 << 20}, {5000, 4 << 20}}
	timeout := failure("call 7600 of 20000", errors.New("timeout: the call did not finish within 100ms"))
	for _, tt := range []struct {
		name    string
		marks   []memMark
		failed  int
		fail    []string
		want    string
		wantNil bool
	}{
		{"timeout after growth", grow, 7600, timeout, "a leak: memory grew from 4096 KiB to 10240 KiB over 7499 calls (1 to 7500), then call 7600 failed", false},
		{"timeout without growth", flat, 5100, timeout, "call 7600 of 20000: timeout", false},
		{"growth in every quarter of the second run", []memMark{{1, 4 << 20}, {4, 5 << 20}, {5, 6 << 20}, {6, 7 << 20}, {7, 8 << 20}, {8, 9 << 20}}, 0, nil, "a leak: memory grew from 5120 KiB to 9216 KiB over 4 calls", false},
		{"a heap that settles", []memMark{{1, 4 << 20}, {4, 6 << 20}, {5, 6 << 20}, {6, 6 << 20}, {7, 6 << 20}, {8, 6 << 20}}, 0, nil, "", true},
	} {
		got := leakFinding("call", tt.marks, 4, tt.failed, tt.fail)
		if tt.wantNil {
			if got != nil {
				t.Errorf("%s: %q, want no finding", tt.name, got)
			}
			continue
		}
		if !strings.Contains(strings.Join(got, "\n"), tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
