//go:build wasip1

package abi

import "unsafe"

// The signature host function (docs/abi.md section 1.5).

//go:wasmimport wasmkube sign_fragment
func SignFragment(key unsafe.Pointer, keyLen int32, val unsafe.Pointer, valLen int32)
