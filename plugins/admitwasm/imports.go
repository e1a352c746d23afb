package admitwasm

import (
	"encoding/binary"
	"errors"
)

// wasmImports lists the functions a module imports, as module and name, from its import
// section, without compiling it: the loader names a missing capability before the host
// would refuse it in words that do not fit admission's list of resources.
func wasmImports(bin []byte) ([][2]string, error) {
	errBad := errors.New("malformed module")
	if len(bin) < 8 {
		return nil, errBad
	}
	b := bin[8:]
	for len(b) > 0 {
		id := b[0]
		size, n := binary.Uvarint(b[1:])
		if n <= 0 || uint64(len(b)-1-n) < size {
			return nil, errBad
		}
		sec := b[1+n : 1+n+int(size)]
		b = b[1+n+int(size):]
		if id != 2 {
			continue
		}
		count, n := binary.Uvarint(sec)
		if n <= 0 {
			return nil, errBad
		}
		sec = sec[n:]
		var out [][2]string
		name := func() (string, bool) {
			l, n := binary.Uvarint(sec)
			if n <= 0 || uint64(len(sec)-n) < l {
				return "", false
			}
			s := string(sec[n : n+int(l)])
			sec = sec[n+int(l):]
			return s, true
		}
		skipU := func() bool {
			_, n := binary.Uvarint(sec)
			if n <= 0 {
				return false
			}
			sec = sec[n:]
			return true
		}
		skipLimits := func() bool {
			if len(sec) < 1 {
				return false
			}
			flag := sec[0]
			sec = sec[1:]
			if !skipU() {
				return false
			}
			if flag&1 != 0 {
				return skipU()
			}
			return true
		}
		for range count {
			mod, ok1 := name()
			fn, ok2 := name()
			if !ok1 || !ok2 || len(sec) < 1 {
				return nil, errBad
			}
			kind := sec[0]
			sec = sec[1:]
			ok := false
			switch kind {
			case 0: // function: type index
				ok = skipU()
				out = append(out, [2]string{mod, fn})
			case 1: // table: reftype, limits
				if len(sec) > 0 {
					sec = sec[1:]
					ok = skipLimits()
				}
			case 2: // memory: limits
				ok = skipLimits()
			case 3: // global: valtype, mutability
				if len(sec) >= 2 {
					sec, ok = sec[2:], true
				}
			}
			if !ok {
				return nil, errBad
			}
		}
		return out, nil
	}
	return nil, nil
}
