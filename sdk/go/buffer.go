package sdk

import "unsafe"

// fillFunc is a host function that writes a variable-size value into (buf, cap) and returns
// its full length, or a negative ABI code.
type fillFunc func(buf unsafe.Pointer, cap int32) int32

// scratch is reused by every read: a guest instance is single-threaded.
var scratch = make([]byte, 4096)

// readVar implements the buffer rule of docs/abi.md section 2: try the scratch buffer, and
// if the host reports a longer value, grow it and ask again. The returned slice aliases the
// scratch buffer and is valid until the next read. code is negative when the value does
// not exist (-1) or is not part of this call (-2).
func readVar(fill fillFunc) (b []byte, code int32) {
	n := fill(unsafe.Pointer(unsafe.SliceData(scratch)), int32(len(scratch)))
	if n < 0 {
		return nil, n
	}
	if int(n) > len(scratch) {
		scratch = make([]byte, grow(len(scratch), int(n)))
		n = fill(unsafe.Pointer(unsafe.SliceData(scratch)), int32(len(scratch)))
		if n < 0 {
			return nil, n
		}
		if int(n) > len(scratch) {
			// The ABI promises values do not change during a call; a host that breaks
			// that promise gets an empty value, not a loop.
			return nil, -2
		}
	}
	return scratch[:n], n
}

// grow returns a capacity of at least need, doubling from have to keep re-reads rare.
func grow(have, need int) int {
	c := have
	for c < need {
		c *= 2
	}
	return c
}

// readString is readVar copied into a string; ok is false when the value does not exist.
func readString(fill fillFunc) (string, bool) {
	b, code := readVar(fill)
	if code < 0 {
		return "", false
	}
	return string(b), true
}

// readBytes is readVar copied into a new slice.
func readBytes(fill fillFunc) ([]byte, bool) {
	b, code := readVar(fill)
	if code < 0 {
		return nil, false
	}
	return append([]byte(nil), b...), true
}

func strPtr(s string) (unsafe.Pointer, int32) {
	return unsafe.Pointer(unsafe.StringData(s)), int32(len(s))
}

func bytesPtr(b []byte) (unsafe.Pointer, int32) {
	return unsafe.Pointer(unsafe.SliceData(b)), int32(len(b))
}
