//go:build wasip1

package validate

//go:wasmexport wasmkube_validate
func wasmkubeValidate() int32 { return run() }
