//go:build wasip1

package permit

//go:wasmexport wasmkube_permit
func wasmkubePermit() int32 { return run() }
