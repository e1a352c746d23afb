package wasmhost

import (
	"runtime"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// Linear memory lives off the Go heap (docs/plugins.md, "Linear memory"): each instance
// reserves address space for its whole memory limit when it is created, inaccessible, and
// makes pages read-write as the guest grows into them. A grow never copies and never
// allocates on the Go heap, so a memory bomb (a guest growing to its limit) costs the
// garbage collector nothing, and a discarded instance's memory goes back to the system
// when it is closed, not at some later collection.
//
// The mapping is unmapped only when no call can touch it: wazero frees it when the
// instance is closed, and an instance closed while a call runs on it (its runtime closed
// under the call) keeps its mapping until that call has left (instanceMemory.enter and
// leave bracket every call).

// instanceMemory is an instance's linear memory and the calls running on it.
type instanceMemory struct {
	experimental.LinearMemory
	// reserved is the mapping of a reserved memory; nil for a heap memory.
	reserved *mapping
	users    atomic.Int32
	freed    atomic.Bool
}

// newInstanceMemory returns the memory of an instance whose memory may grow to max bytes:
// reserved address space, or (where no address space can be reserved, or heap is set) a
// growingMemory on the Go heap.
func newInstanceMemory(capacity, max uint64, heap bool) *instanceMemory {
	if !heap && max > 0 {
		if r, err := reserve(max); err == nil {
			m := &instanceMemory{LinearMemory: r, reserved: r.m}
			// The safety net for an instance nobody closes (its runtime dropped unclosed):
			// once wazero and the pool no longer reach the memory, no call can touch it.
			runtime.AddCleanup(m, (*mapping).unmap, r.m)
			return m
		}
	}
	return &instanceMemory{LinearMemory: &growingMemory{buf: make([]byte, 0, min(capacity, max)), max: max}}
}

// enter registers a call on the instance; leave ends it. A call must enter before wazero
// checks that the instance is open, so that a Free after that check waits for leave.
// Both do nothing on nil (a module without memory).
func (m *instanceMemory) enter() {
	if m != nil {
		m.users.Add(1)
	}
}

func (m *instanceMemory) leave() {
	if m != nil && m.users.Add(-1) == 0 && m.freed.Load() {
		m.release()
	}
}

// Free implements experimental.LinearMemory: wazero calls it when the instance closes.
func (m *instanceMemory) Free() {
	m.freed.Store(true)
	if m.users.Load() == 0 {
		m.release()
	}
}

func (m *instanceMemory) release() {
	if m.reserved != nil {
		m.reserved.unmap()
	} else {
		m.LinearMemory.Free()
	}
}

// Reserved reports whether the memory is a reservation off the Go heap.
func (m *instanceMemory) Reserved() bool { return m.reserved != nil }

// growingMemory backs an instance's linear memory with a Go slice whose capacity at least
// doubles when a memory.grow needs more, up to the instance's limit: the fallback where no
// address space can be reserved. Doubling copies at most about as much as the final
// memory in total; the garbage collector frees the slice.
type growingMemory struct {
	buf []byte
	max uint64
}

// Reallocate implements experimental.LinearMemory: the memory's first size bytes, the
// bytes beyond the old length zero; nil beyond the limit (memory.grow returns -1).
func (m *growingMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size] // never shrinks: the bytes between the lengths are still zero
		return m.buf
	}
	c := min(max(size, 2*uint64(cap(m.buf)), 1<<20), m.max)
	b := make([]byte, size, c)
	copy(b, m.buf)
	m.buf = b
	return b
}

// Free implements experimental.LinearMemory; the garbage collector frees the slice.
func (m *growingMemory) Free() { m.buf = nil }
