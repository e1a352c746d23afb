package admit

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
		{sdk.Status{Reason: "ignored"}, 0, ""},
		{sdk.Deny("no"), 2, "no"},
		{sdk.Errorf("bad %s", "args"), 1, "bad args"},
		{sdk.Skip(), 1, "validate: status code 5 is not an admission result (use sdk.OK, sdk.Deny or sdk.Errorf): "},
		{sdk.Status{Code: sdk.CodeUnschedulableAndUnresolvable, Reason: "r"}, 1, "validate: status code 3 is not an admission result (use sdk.OK, sdk.Deny or sdk.Errorf): r"},
	}
	for _, tt := range tests {
		if code, reason := Result("validate", tt.st); code != tt.code || reason != tt.reason {
			t.Errorf("Result(%+v) = %d %q, want %d %q", tt.st, code, reason, tt.code, tt.reason)
		}
	}
}
