//go:build wasip1

package abi

import "unsafe"

// The binding-cycle and queueing host functions (docs/abi.md section 4.8).

//go:wasmimport wasmkube pod_uid
func PodUID(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube shared_add
func SharedAdd(key unsafe.Pointer, keyLen int32, delta int64) int64

//go:wasmimport wasmkube shared_get
func SharedGet(key unsafe.Pointer, keyLen int32) int64

//go:wasmimport wasmkube permit_wait
func PermitWait(timeoutMs int32, group unsafe.Pointer, groupLen int32)

//go:wasmimport wasmkube waiting_pods
func WaitingPods(group unsafe.Pointer, groupLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube waiting_allow
func WaitingAllow(uid unsafe.Pointer, uidLen int32) int32

//go:wasmimport wasmkube waiting_reject
func WaitingReject(uid unsafe.Pointer, uidLen int32, reason unsafe.Pointer, reasonLen int32) int32

//go:wasmimport wasmkube register_event
func RegisterEvent(res unsafe.Pointer, resLen int32, actions int32)

//go:wasmimport wasmkube event_resource
func EventResource(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube event_action
func EventAction() int32

//go:wasmimport wasmkube event_object_json
func EventObjectJSON(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube event_old_object_json
func EventOldObjectJSON(buf unsafe.Pointer, cap int32) int32
