//go:build !wasip1

package abi

import "unsafe"

func ContainerName(buf unsafe.Pointer, cap int32) int32 { noHost("container_name"); return 0 }

func ProbeKind(buf unsafe.Pointer, cap int32) int32 { noHost("probe_kind"); return 0 }

func PodIP(buf unsafe.Pointer, cap int32) int32 { noHost("pod_ip"); return 0 }

func TCPConnect(port int32) int32 { noHost("tcp_connect"); return 0 }

func HTTPGet(port int32, path unsafe.Pointer, pathLen int32) int32 { noHost("http_get"); return 0 }

func HTTPPost(port int32, path unsafe.Pointer, pathLen int32, body unsafe.Pointer, bodyLen int32) int32 {
	noHost("http_post")
	return 0
}

func ResponseBody(buf unsafe.Pointer, cap int32) int32 { noHost("response_body"); return 0 }

func ResponseHeader(name unsafe.Pointer, nameLen int32, buf unsafe.Pointer, cap int32) int32 {
	noHost("response_header")
	return 0
}

func SleepMS(ms int32) int32 { noHost("sleep_ms"); return 0 }
