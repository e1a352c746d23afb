//go:build wasip1

package reserve

//go:wasmexport wasmkube_reserve
func wasmkubeReserve() int32 { return run() }

//go:wasmexport wasmkube_unreserve
func wasmkubeUnreserve() int32 { return runUnreserve() }
