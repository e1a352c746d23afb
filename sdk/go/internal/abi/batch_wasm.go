//go:build wasip1

package abi

import "unsafe"

// The run forms of node_resources and node_score (docs/abi.md section 4.3): one crossing
// for a run of the batch's nodes instead of one per node.

//go:wasmimport wasmkube node_resources_range
func NodeResourcesRange(first, count int32, out unsafe.Pointer) int32

//go:wasmimport wasmkube node_scores
func NodeScores(first, count int32, scores unsafe.Pointer)
