package kubelet

import (
	"errors"
	"testing"
)

func TestDecidePodCIDR(t *testing.T) {
	for _, tc := range []struct {
		allocated, override string
		use                 string
		claim, mismatch     bool
	}{
		{allocated: "", override: "", use: ""},                                      // wait for node IPAM
		{allocated: "10.64.3.0/24", override: "", use: "10.64.3.0/24"},              // node IPAM's
		{allocated: "", override: "10.64.9.0/24", use: "10.64.9.0/24", claim: true}, // the override, written into the Node
		{allocated: "10.64.9.0/24", override: "10.64.9.0/24", use: "10.64.9.0/24"},  // agree
		{allocated: "10.64.9.1/24", override: "10.64.9.0/24", use: "10.64.9.0/24"},  // agree once masked
		{allocated: "10.64.3.0/24", override: "10.64.9.0/24", mismatch: true},       // refused
	} {
		d := decidePodCIDR("n1", tc.allocated, tc.override)
		var me *PodCIDRMismatchError
		if tc.mismatch != errors.As(d.err, &me) || d.use != tc.use || d.claim != tc.claim {
			t.Errorf("decidePodCIDR(%q, %q) = %+v, want use %q claim %v mismatch %v", tc.allocated, tc.override, d, tc.use, tc.claim, tc.mismatch)
		}
		if me != nil && (me.Node != "n1" || me.Allocated != tc.allocated || me.Override != tc.override) {
			t.Errorf("mismatch error %+v does not name the node and both subnets", me)
		}
	}
}
