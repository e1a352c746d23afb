package wasmhost

import (
	"context"
	"time"
)

// WithContextInterrupt makes Load skip the deadline rewrite (benchmarks compare the two).
func WithContextInterrupt(o LoadOptions) LoadOptions {
	o.contextInterrupt = true
	return o
}

// RunRaw calls k on an instance of p with the batch size count and returns wazero's raw
// error, before the host trims it to its first line.
func RunRaw(p *Pool, k *Kind, count int) error {
	inst, err := p.acquire(context.Background(), 0)
	if err != nil {
		return err
	}
	defer func() { p.closeInst(inst); p.slots <- nil }()
	inst.call = &Call{Kind: k, Count: count, inst: inst}
	stack := inst.stack[:]
	stack[0] = uint64(count)
	err, _ = inst.run(context.Background(), inst.fns[k], stack, time.Minute)
	return err
}

// SameCompiled reports whether two modules share one compiled module.
func SameCompiled(a, b *Module) bool { return a.compiled == b.compiled }

// WithHeapMemory makes the host keep linear memory on the Go heap (growingMemory), as
// before it was reserved off the heap: benchmarks compare the two.
func WithHeapMemory(o Options) Options {
	o.heapMemory = true
	return o
}

// MemoryReserved reports whether the idle instances of p have reserved memory (off the Go
// heap); false when any has not.
func MemoryReserved(p *Pool) bool {
	ok := true
	var taken []*instance
	for range cap(p.slots) {
		select {
		case inst := <-p.slots:
			taken = append(taken, inst)
			if inst != nil && (inst.mem == nil || !inst.mem.Reserved()) {
				ok = false
			}
			continue
		default:
		}
		break
	}
	for _, inst := range taken {
		p.slots <- inst
	}
	return ok
}

// Released returns, for each idle instance of p with reserved memory, whether its mapping
// has been given back (asked later, after the instance is gone).
func Released(p *Pool) []func() bool {
	var out []func() bool
	var taken []*instance
	for range cap(p.slots) {
		select {
		case inst := <-p.slots:
			taken = append(taken, inst)
			if inst != nil && inst.mem != nil && inst.mem.reserved != nil {
				out = append(out, inst.mem.reserved.released)
			}
			continue
		default:
		}
		break
	}
	for _, inst := range taken {
		p.slots <- inst
	}
	return out
}
