// Package admit turns the Status of an admission policy's function into the entry point's
// result; the validate and mutate packages share it.
package admit

import (
	"fmt"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

// Result is the code and reason the entry point reports for st. Validate and Mutate may
// return only Success, Error and Denied (docs/abi.md section 1.3); any other code (a
// scheduler plugin's Skip or UnschedulableAndUnresolvable) would be a garbage result on the
// host, so it becomes the policy's Error with a reason that says what went wrong.
func Result(kind string, st sdk.Status) (code int32, reason string) {
	switch st.Code {
	case sdk.CodeSuccess:
		return int32(sdk.CodeSuccess), ""
	case sdk.CodeError, sdk.CodeDenied:
		return int32(st.Code), st.Reason
	}
	return int32(sdk.CodeError), fmt.Sprintf("%s: status code %d is not an admission result (use sdk.OK, sdk.Deny or sdk.Errorf): %s", kind, st.Code, st.Reason)
}

// Report sets the reason of st's result and returns its code.
func Report(kind string, st sdk.Status) int32 {
	code, reason := Result(kind, st)
	sdk.SetReason(reason)
	return code
}
