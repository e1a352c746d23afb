package main

import (
	"os"
	"testing"
)

// TestMain lets a test run this package's test binary as the wasmkube command: with
// WASMKUBE_TEST_RUN_MAIN=1 it is `wasmkube <args>` (TestUpNodes starts `up --nodes 3`
// so, and up starts its hosts' kubelets from the same binary, os.Executable).
func TestMain(m *testing.M) {
	if os.Getenv("WASMKUBE_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
