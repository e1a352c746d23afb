package wasmhost

import (
	"sync/atomic"
	"syscall"
)

// mapping is an address range reserved for one instance's linear memory.
type mapping struct {
	b         []byte // the whole reservation
	committed uint64 // bytes made read-write, from the start
	done      atomic.Bool
}

// reservedMemory is a linear memory in a mapping: it grows by making more of the mapping
// read-write, in place.
type reservedMemory struct {
	m   *mapping
	max uint64
}

var osPage = uint64(syscall.Getpagesize())

// reserve maps max bytes (rounded up to whole pages) of inaccessible address space: no
// memory is committed until Reallocate makes it read-write, and MAP_NORESERVE keeps the
// reservation out of the system's commit charge.
func reserve(max uint64) (*reservedMemory, error) {
	b, err := syscall.Mmap(-1, 0, int(roundPage(max)), syscall.PROT_NONE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	return &reservedMemory{m: &mapping{b: b}, max: max}, nil
}

func roundPage(n uint64) uint64 { return (n + osPage - 1) &^ (osPage - 1) }

// Reallocate implements experimental.LinearMemory: the memory's first size bytes, in
// place; the bytes beyond the old length are zero (fresh anonymous pages, and a memory
// never shrinks). nil beyond the limit, or when the system refuses the pages: memory.grow
// returns -1.
func (r *reservedMemory) Reallocate(size uint64) []byte {
	if size > r.max {
		return nil
	}
	if size > r.m.committed {
		end := roundPage(size)
		if err := syscall.Mprotect(r.m.b[r.m.committed:end], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil
		}
		r.m.committed = end
	}
	return r.m.b[:size:size]
}

// Free implements experimental.LinearMemory (instanceMemory decides when to call it).
func (r *reservedMemory) Free() { r.m.unmap() }

// released reports whether the range was given back.
func (m *mapping) released() bool { return m.done.Load() }

// unmap gives the range back to the system, once.
func (m *mapping) unmap() {
	if m.done.CompareAndSwap(false, true) {
		_ = syscall.Munmap(m.b)
	}
}
