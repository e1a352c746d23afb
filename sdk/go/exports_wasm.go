//go:build wasip1

package sdk

//go:wasmexport wasmkube_abi_version
func wasmkubeABIVersion() int32 { return ABIVersion }

//go:wasmexport wasmkube_init
func wasmkubeInit() int32 { return runInit() }
