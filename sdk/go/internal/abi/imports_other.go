//go:build !wasip1

package abi

import "unsafe"

// On targets other than wasip1 the host functions do not exist; calling one is a bug in
// a test that ran plugin code outside the host.
func noHost(name string) {
	panic("wasmkube sdk: host function " + name + " is only available inside the wasm host")
}

func PodJSON(buf unsafe.Pointer, cap int32) int32 { noHost("pod_json"); return 0 }

func PodName(buf unsafe.Pointer, cap int32) int32 { noHost("pod_name"); return 0 }

func PodNamespace(buf unsafe.Pointer, cap int32) int32 { noHost("pod_namespace"); return 0 }

func PodLabel(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("pod_label")
	return 0
}

func PodAnnotation(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("pod_annotation")
	return 0
}

func PodRequests(out unsafe.Pointer) int32 { noHost("pod_requests"); return 0 }

func PodScalarNames(buf unsafe.Pointer, cap int32) int32 { noHost("pod_scalar_names"); return 0 }

func PodScalarRequest(name unsafe.Pointer, nameLen int32) int64 {
	noHost("pod_scalar_request")
	return 0
}

func Args(buf unsafe.Pointer, cap int32) int32 { noHost("args"); return 0 }

func StateGet(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("state_get")
	return 0
}

func StateSet(key unsafe.Pointer, keyLen int32, val unsafe.Pointer, valLen int32) int32 {
	noHost("state_set")
	return 0
}

func NodeJSON(i int32, buf unsafe.Pointer, cap int32) int32 { noHost("node_json"); return 0 }

func NodeName(i int32, buf unsafe.Pointer, cap int32) int32 { noHost("node_name"); return 0 }

func NodeLabel(i int32, key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("node_label")
	return 0
}

func NodeTaints(i int32, buf unsafe.Pointer, cap int32) int32 { noHost("node_taints"); return 0 }

func NodeResources(i int32, out unsafe.Pointer) int32 { noHost("node_resources"); return 0 }

func NodeScalar(i int32, which int32, name unsafe.Pointer, nameLen int32) int64 {
	noHost("node_scalar")
	return 0
}

func NodeFilterCode(i int32) int32 { noHost("node_filter_code"); return 0 }

func ScoreGet(i int32) int64 { noHost("score_get"); return 0 }

func StatusReason(p unsafe.Pointer, l int32) { noHost("status_reason") }

func NodeStatus(i int32, code int32, p unsafe.Pointer, l int32) { noHost("node_status") }

func NodeScore(i int32, score int64) { noHost("node_score") }

func PrefilterNode(p unsafe.Pointer, l int32) { noHost("prefilter_node") }

func Nominate(p unsafe.Pointer, l int32) { noHost("nominate") }

func Log(level int32, p unsafe.Pointer, l int32) { noHost("log") }
