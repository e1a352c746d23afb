//go:build wasip1

package score

//go:wasmexport wasmkube_score
func wasmkubeScore(count int32) int32 { return run(count) }
