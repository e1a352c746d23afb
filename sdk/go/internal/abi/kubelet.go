//go:build wasip1

package abi

import "unsafe"

// The kubelet hooks' host functions (docs/abi.md section 4.7). A module imports only the
// ones it calls, so a scheduler plugin built with this SDK never imports them.

//go:wasmimport wasmkube container_name
func ContainerName(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube probe_kind
func ProbeKind(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube pod_ip
func PodIP(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube tcp_connect
func TCPConnect(port int32) int32

//go:wasmimport wasmkube http_get
func HTTPGet(port int32, path unsafe.Pointer, pathLen int32) int32

//go:wasmimport wasmkube http_post
func HTTPPost(port int32, path unsafe.Pointer, pathLen int32, body unsafe.Pointer, bodyLen int32) int32

//go:wasmimport wasmkube response_body
func ResponseBody(buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube response_header
func ResponseHeader(name unsafe.Pointer, nameLen int32, buf unsafe.Pointer, cap int32) int32

//go:wasmimport wasmkube sleep_ms
func SleepMS(ms int32) int32
