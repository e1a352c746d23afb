//go:build wasip1

package queueing

//go:wasmexport wasmkube_events
func wasmkubeEvents() int32 { return runEvents() }

//go:wasmexport wasmkube_queueing_hint
func wasmkubeQueueingHint() int32 { return runHint() }
