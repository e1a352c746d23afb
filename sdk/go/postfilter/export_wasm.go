//go:build wasip1

package postfilter

//go:wasmexport wasmkube_postfilter
func wasmkubePostFilter(count int32) int32 { return run(count) }
