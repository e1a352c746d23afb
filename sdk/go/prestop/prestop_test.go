package prestop

import (
	"testing"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

func TestResult(t *testing.T) {
	tests := []struct {
		st     sdk.Status
		code   int32
		reason string
	}{
		{sdk.OK(), 0, ""},
		{sdk.Errorf("drain: connection refused"), 1, "drain: connection refused"},
		{sdk.Status{Code: sdk.CodeFailure, Reason: "still 3 in flight"}, 1, "still 3 in flight"},
		{sdk.Status{Code: 7}, 1, "prestop: status code 7"},
	}
	for _, tt := range tests {
		if code, reason := result(tt.st); code != tt.code || reason != tt.reason {
			t.Errorf("result(%+v) = %d %q, want %d %q", tt.st, code, reason, tt.code, tt.reason)
		}
	}
}
