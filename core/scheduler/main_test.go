package scheduler_test

import (
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain sends client-go's klog output (leader election, reflectors, the event
// recorder) to the tests' logger: silent unless WASMKUBE_TEST_LOG is set.
func TestMain(m *testing.M) {
	klog.SetSlogLogger(testLogger())
	os.Exit(m.Run())
}
