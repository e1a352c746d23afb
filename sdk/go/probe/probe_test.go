package probe

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
		{Success(), 0, ""},
		{sdk.Status{Code: sdk.CodeSuccess, Reason: "ignored"}, 0, ""},
		{Failure("status is starting"), 2, "status is starting"},
		{Failuref("%s is %d", "errors_total", 12), 2, "errors_total is 12"},
		{sdk.Errorf("args: bad"), 1, "args: bad"},
		{sdk.Skip(), 1, "probe: status code 5 is not a probe result (0 success, 2 failure, 1 error): "},
		{sdk.Status{Code: 3, Reason: "x"}, 1, "probe: status code 3 is not a probe result (0 success, 2 failure, 1 error): x"},
	}
	for _, tt := range tests {
		if code, reason := result(tt.st); code != tt.code || reason != tt.reason {
			t.Errorf("result(%+v) = %d %q, want %d %q", tt.st, code, reason, tt.code, tt.reason)
		}
	}
}
