//go:build wasip1

package mutate

//go:wasmexport wasmkube_mutate
func wasmkubeMutate() int32 { return run() }
