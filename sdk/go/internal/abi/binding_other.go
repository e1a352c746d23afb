//go:build !wasip1

package abi

import "unsafe"

func PodUID(buf unsafe.Pointer, cap int32) int32 { noHost("pod_uid"); return 0 }

func SharedAdd(key unsafe.Pointer, keyLen int32, delta int64) int64 {
	noHost("shared_add")
	return 0
}

func SharedGet(key unsafe.Pointer, keyLen int32) int64 { noHost("shared_get"); return 0 }

func PermitWait(timeoutMs int32, group unsafe.Pointer, groupLen int32) { noHost("permit_wait") }

func WaitingPods(group unsafe.Pointer, groupLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("waiting_pods")
	return 0
}

func WaitingAllow(uid unsafe.Pointer, uidLen int32) int32 { noHost("waiting_allow"); return 0 }

func WaitingReject(uid unsafe.Pointer, uidLen int32, reason unsafe.Pointer, reasonLen int32) int32 {
	noHost("waiting_reject")
	return 0
}

func RegisterEvent(res unsafe.Pointer, resLen int32, actions int32) { noHost("register_event") }

func EventResource(buf unsafe.Pointer, cap int32) int32 { noHost("event_resource"); return 0 }

func EventAction() int32 { noHost("event_action"); return 0 }

func EventObjectJSON(buf unsafe.Pointer, cap int32) int32 { noHost("event_object_json"); return 0 }

func EventOldObjectJSON(buf unsafe.Pointer, cap int32) int32 {
	noHost("event_old_object_json")
	return 0
}
