//go:build !wasip1

package abi

import "unsafe"

func SignFragment(key unsafe.Pointer, keyLen int32, val unsafe.Pointer, valLen int32) {
	noHost("sign_fragment")
}
