//go:build wasip1

package abi

import "unsafe"

// Admission host functions (docs/abi.md section 4.6). The Go linker imports only the
// functions a module calls, so a validating policy does not import set_patch and a policy
// that never reads other objects does not import the capability-gated get_object and
// list_objects (and loads without a capabilities grant).

//go:wasmimport wasmkube request_json
func RequestJSON(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube request_operation
func RequestOperation(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube request_kind
func RequestKind(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube request_resource
func RequestResource(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube request_name
func RequestName(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube request_namespace
func RequestNamespace(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube request_user
func RequestUser(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube request_groups
func RequestGroups(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube object_json
func ObjectJSON(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube old_object_json
func OldObjectJSON(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube object_get
func ObjectGet(path unsafe.Pointer, pathLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube old_object_get
func OldObjectGet(path unsafe.Pointer, pathLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube object_label
func ObjectLabel(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube object_annotation
func ObjectAnnotation(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube old_object_label
func OldObjectLabel(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube old_object_annotation
func OldObjectAnnotation(key unsafe.Pointer, keyLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube pod_images
func PodImages(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube warning
func Warning(p unsafe.Pointer, l int32)

//go:wasmimport wasmkube audit_annotation
func AuditAnnotation(key unsafe.Pointer, keyLen int32, val unsafe.Pointer, valLen int32)

//go:wasmimport wasmkube set_patch
func SetPatch(p unsafe.Pointer, l int32)

//go:wasmimport wasmkube get_object
func GetObject(res unsafe.Pointer, resLen int32, name unsafe.Pointer, nameLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube list_objects
func ListObjects(res unsafe.Pointer, resLen int32, buf unsafe.Pointer, cap int32) int32
