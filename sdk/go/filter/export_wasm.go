//go:build wasip1

package filter

//go:wasmexport wasmkube_filter
func wasmkubeFilter(count int32) int32 { return run(count) }
