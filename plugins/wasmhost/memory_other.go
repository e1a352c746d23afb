//go:build !linux

package wasmhost

import (
	"errors"

	"github.com/tetratelabs/wazero/experimental"
)

// mapping is not used where memory cannot be reserved.
type mapping struct{}

func (*mapping) unmap() {}

func (*mapping) released() bool { return true }

type reservedMemory struct {
	experimental.LinearMemory
	m *mapping
}

// reserve fails: linear memory lives on the Go heap (growingMemory).
func reserve(uint64) (*reservedMemory, error) {
	return nil, errors.New("reserving linear memory is implemented on Linux only")
}
