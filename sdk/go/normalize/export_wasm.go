//go:build wasip1

package normalize

//go:wasmexport wasmkube_normalizescore
func wasmkubeNormalizeScore(count int32) int32 { return run(count) }
