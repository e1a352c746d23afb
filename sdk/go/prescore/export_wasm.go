//go:build wasip1

package prescore

//go:wasmexport wasmkube_prescore
func wasmkubePreScore(count int32) int32 { return run(count) }
