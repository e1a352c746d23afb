//go:build !wasip1

package abi

import "unsafe"

// Native stubs of the admission host functions (admission.go); see imports_other.go.

func RequestJSON(buf unsafe.Pointer, cap int32) int32 { noHost("request_json"); return 0 }

func RequestOperation(buf unsafe.Pointer, cap int32) int32 {
	noHost("request_operation")
	return 0
}

func RequestKind(buf unsafe.Pointer, cap int32) int32 { noHost("request_kind"); return 0 }

func RequestResource(buf unsafe.Pointer, cap int32) int32 { noHost("request_resource"); return 0 }

func RequestName(buf unsafe.Pointer, cap int32) int32 { noHost("request_name"); return 0 }

func RequestNamespace(buf unsafe.Pointer, cap int32) int32 {
	noHost("request_namespace")
	return 0
}

func RequestUser(buf unsafe.Pointer, cap int32) int32 { noHost("request_user"); return 0 }

func RequestGroups(buf unsafe.Pointer, cap int32) int32 { noHost("request_groups"); return 0 }

func ObjectJSON(buf unsafe.Pointer, cap int32) int32 { noHost("object_json"); return 0 }

func OldObjectJSON(buf unsafe.Pointer, cap int32) int32 { noHost("old_object_json"); return 0 }

func ObjectGet(path unsafe.Pointer, pathLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("object_get")
	return 0
}

func OldObjectGet(path unsafe.Pointer, pathLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("old_object_get")
	return 0
}

func ObjectLabel(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("object_label")
	return 0
}

func ObjectAnnotation(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("object_annotation")
	return 0
}

func OldObjectLabel(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("old_object_label")
	return 0
}

func OldObjectAnnotation(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("old_object_annotation")
	return 0
}

func PodImages(buf unsafe.Pointer, cap int32) int32 { noHost("pod_images"); return 0 }

func Warning(p unsafe.Pointer, l int32) { noHost("warning") }

func AuditAnnotation(key unsafe.Pointer, keyLen int32, val unsafe.Pointer, valLen int32) {
	noHost("audit_annotation")
}

func SetPatch(p unsafe.Pointer, l int32) { noHost("set_patch") }

func GetObject(res unsafe.Pointer, resLen int32, name unsafe.Pointer, nameLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("get_object")
	return 0
}

func ListObjects(res unsafe.Pointer, resLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("list_objects")
	return 0
}
