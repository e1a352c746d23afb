//go:build wasip1

package prefilter

//go:wasmexport wasmkube_prefilter
func wasmkubePreFilter() int32 { return run() }
