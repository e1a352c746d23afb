//go:build wasip1

package prebind

//go:wasmexport wasmkube_prebind
func wasmkubePreBind() int32 { return run() }
