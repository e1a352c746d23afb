package wasmhost

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// memModule is an instance of (module (memory (export "memory") 1)): one 64 KiB page.
func memModule(f *testing.F) api.Module {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	f.Cleanup(func() { _ = rt.Close(ctx) })
	wasm := []byte("\x00asm\x01\x00\x00\x00" +
		"\x05\x03\x01\x00\x01" + // memory section: one memory, min 1 page
		"\x07\x0a\x01\x06memory\x02\x00") // export "memory" as memory 0
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		f.Fatal(err)
	}
	return mod
}

// hostCall runs fn as a host function runs: a *badPointerError panic is the documented way
// to end the guest's call (wazero recovers it); any other panic is a host bug.
func hostCall(t *testing.T, fn func()) (badPointer bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			var bp *badPointerError
			if err, ok := r.(error); ok && errors.As(err, &bp) {
				badPointer = true
				return
			}
			t.Fatalf("host function panicked with %v", r)
		}
	}()
	fn()
	return false
}

// FuzzGuestMemory: the helpers every host function reads guest memory with (Mem, WriteVar,
// Lookup), on any pointer and length a guest can pass. They return exactly the range asked
// for when it is inside memory and refuse it (a bad-pointer trap) otherwise, and write
// only inside the buffer the guest gave. `go test` runs the seeds; `make fuzz` runs it for
// longer.
func FuzzGuestMemory(f *testing.F) {
	mod := memModule(f)
	size := uint64(mod.Memory().Size())
	f.Add(uint64(0), uint64(4), uint64(16), uint64(8), []byte("key"), []byte("value"))
	f.Add(size-1, uint64(1), size-8, uint64(8), []byte("k"), []byte("12345678"))
	f.Add(size, uint64(0), size, uint64(0), []byte(""), []byte(""))
	f.Add(size-2, uint64(4), uint64(0), uint64(1<<32-1), []byte("k"), []byte("v"))
	f.Add(uint64(1<<32-1), uint64(2), uint64(1<<32+5), uint64(1<<33), []byte("x"), bytes.Repeat([]byte("v"), 300))
	f.Add(uint64(0xfffffff0), uint64(100), uint64(100), uint64(0xfffffff0), []byte("key"), []byte("v"))
	f.Fuzz(func(t *testing.T, ptr, l, buf, capacity uint64, key, val []byte) {
		mem := mod.Memory()
		// The guest passes i32s: the host sees them zero-extended.
		ptr, l, buf, capacity = uint64(uint32(ptr)), uint64(uint32(l)), uint64(uint32(buf)), uint64(uint32(capacity))
		inside := func(p, n uint64) bool { return p+n <= size }

		var got []byte
		bad := hostCall(t, func() { got = Mem(mod, "fuzz", ptr, l) })
		if bad == inside(ptr, l) || (!bad && uint64(len(got)) != l) {
			t.Fatalf("Mem(%#x, %d) on %d bytes: bad pointer %v, %d bytes", ptr, l, size, bad, len(got))
		}

		// WriteVar writes val only if it fits, only into (buf, cap), and returns len(val).
		before, _ := mem.Read(0, uint32(size))
		before = bytes.Clone(before)
		var n uint64
		bad = hostCall(t, func() { n = WriteVar(mod, "fuzz", buf, capacity, val) })
		if capacity > 0 && bad == inside(buf, capacity) {
			t.Fatalf("WriteVar(buf %#x, cap %d): bad pointer %v", buf, capacity, bad)
		}
		after, _ := mem.Read(0, uint32(size))
		if !bad && n != uint64(len(val)) {
			t.Fatalf("WriteVar returned %d for %d bytes", n, len(val))
		}
		for i := range after {
			written := !bad && capacity > 0 && uint64(len(val)) <= capacity && uint64(i) >= buf && uint64(i) < buf+uint64(len(val))
			if !written && after[i] != before[i] {
				t.Fatalf("WriteVar(buf %#x, cap %d, %d bytes) changed byte %#x", buf, capacity, len(val), i)
			}
		}
		if !bad && capacity > 0 && uint64(len(val)) <= capacity && !bytes.Equal(after[buf:buf+uint64(len(val))], val) {
			t.Fatal("WriteVar did not write the value")
		}

		// Lookup of a key put in memory at ptr (when it fits there).
		if inside(ptr, uint64(len(key))) && len(key) > 0 {
			mem.Write(uint32(ptr), key)
			m := map[string]string{string(key): string(val)}
			var r uint64
			bad = hostCall(t, func() { r = Lookup(mod, "fuzz", m, ptr, uint64(len(key)), buf, capacity) })
			if !bad && r != uint64(len(val)) {
				t.Fatalf("Lookup of a present key returned %d, want %d", r, len(val))
			}
			bad = hostCall(t, func() { r = Lookup(mod, "fuzz", map[string]string{}, ptr, uint64(len(key)), buf, capacity) })
			if bad || r != NotFound {
				t.Fatalf("Lookup of a missing key: %d, bad pointer %v", r, bad)
			}
		}
	})
}
