//go:build wasip1

package postbind

//go:wasmexport wasmkube_postbind
func wasmkubePostBind() int32 { return run() }
