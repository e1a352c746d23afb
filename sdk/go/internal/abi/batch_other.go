//go:build !wasip1

package abi

import "unsafe"

// Native stubs of the run forms (batch_wasm.go); see imports_other.go.

func NodeResourcesRange(first, count int32, out unsafe.Pointer) int32 {
	noHost("node_resources_range")
	return 0
}

func NodeScores(first, count int32, scores unsafe.Pointer) { noHost("node_scores") }
