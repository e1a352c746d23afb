//go:build wasip1

package sign

//go:wasmexport wasmkube_sign
func wasmkubeSign() int32 { return run() }
