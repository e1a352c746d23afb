//go:build wasip1

package abi

import "unsafe"

//go:wasmimport wasmkube pod_json
func PodJSON(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube pod_name
func PodName(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube pod_namespace
func PodNamespace(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube pod_label
func PodLabel(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube pod_annotation
func PodAnnotation(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube pod_requests
func PodRequests(out unsafe.Pointer) int32

//go:wasmimport wasmkube pod_scalar_names
func PodScalarNames(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube pod_scalar_request
func PodScalarRequest(name unsafe.Pointer, nameLen int32) int64

//go:wasmimport wasmkube args
func Args(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube state_get
func StateGet(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube state_set
func StateSet(key unsafe.Pointer, keyLen int32, val unsafe.Pointer, valLen int32) int32

//go:wasmimport wasmkube node_json
func NodeJSON(i int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube node_name
func NodeName(i int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube node_label
func NodeLabel(i int32, key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube node_taints
func NodeTaints(i int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube node_resources
func NodeResources(i int32, out unsafe.Pointer) int32

//go:wasmimport wasmkube node_scalar
func NodeScalar(i int32, which int32, name unsafe.Pointer, nameLen int32) int64

//go:wasmimport wasmkube node_filter_code
func NodeFilterCode(i int32) int32

//go:wasmimport wasmkube score_get
func ScoreGet(i int32) int64

//go:wasmimport wasmkube status_reason
func StatusReason(p unsafe.Pointer, l int32)

//go:wasmimport wasmkube node_status
func NodeStatus(i int32, code int32, p unsafe.Pointer, l int32)

//go:wasmimport wasmkube node_score
func NodeScore(i int32, score int64)

//go:wasmimport wasmkube prefilter_node
func PrefilterNode(p unsafe.Pointer, l int32)

//go:wasmimport wasmkube nominate
func Nominate(p unsafe.Pointer, l int32)

//go:wasmimport wasmkube log
func Log(level int32, p unsafe.Pointer, l int32)
