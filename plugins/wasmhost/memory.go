package wasmhost

import "github.com/tetratelabs/wazero/experimental"

// growingMemory backs an instance's linear memory with a Go slice whose capacity at least
// doubles when a memory.grow needs more, up to the instance's limit. wazero's own backing
// appends each grow's pages to the slice, allocating the new pages as a temporary slice
// first: a guest growing 1 MiB at a time made 1 MiB of garbage per grow and a copy of the
// whole memory every quarter of growth. Doubling copies at most about as much as the final
// memory in total, and nothing beyond the limit is ever reserved: an instance that stays
// small (most plugins) costs what it uses, and its memory is the Go heap's, freed by the
// garbage collector (no mapping that a late access could fault on).
type growingMemory struct {
	buf []byte
	max uint64
}

// memoryAllocator is the experimental.MemoryAllocator of every instance.
var memoryAllocator = experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
	return &growingMemory{buf: make([]byte, 0, min(capacity, max)), max: max}
})

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
