//go:build wasip1

package probe

//go:wasmexport wasmkube_probe
func wasmkubeProbe() int32 { return run() }
