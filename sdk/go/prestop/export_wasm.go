//go:build wasip1

package prestop

//go:wasmexport wasmkube_prestop
func wasmkubePreStop() int32 { return run() }
