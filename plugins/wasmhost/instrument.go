package wasmhost

import (
	"bytes"
	"errors"
	"fmt"
)

// deadlineExport is the exported mutable i32 global that instrument adds. The host sets
// it to 1 when a call's time limit passes; the check inserted at every loop header then
// traps. See docs/plugins.md ("Time limits").
const deadlineExport = "wasmkube_deadline"

// growFailedExport is the exported mutable i32 global that instrument sets to 1 whenever a
// memory.grow of the guest returns -1, so that the host can tell a trap that follows a
// refused grow (a language runtime aborting) from any other trap.
const growFailedExport = "wasmkube_grow_failed"

var errNoRewrite = errors.New("module cannot be instrumented")

// instrument rewrites a module so that it can be interrupted cheaply. It adds two mutable
// i32 globals, a fuel counter and a deadline flag (exported as wasmkube_deadline), and
// after every `loop` instruction it inserts:
//
//	fuel -= 1
//	if fuel == 0 {
//		fuel = checkEvery
//		memory.grow 0 (drop)    ;; leaves machine code for Go: a point where the Go runtime
//		                        ;; can preempt the goroutine (GC, scheduling)
//		if deadline { unreachable }
//	}
//
// so a loop iteration costs a global load, a store and a branch. After every memory.grow it
// inserts "if the result is -1, set grow_failed and trap" (through a scratch global, exported
// as wasmkube_grow_failed): a grow beyond the limit ends the call at once, classified as a
// memory-limit failure. Any execution that never
// ends must loop (and hit the check) or recurse (and overflow the stack), so a rewritten
// module always stops soon after the host raises the flag, and never keeps the Go runtime
// from stopping the world.
//
// It refuses (errNoRewrite) modules it does not fully understand: a start section (code
// that would run before the host can arm a deadline), an opcode outside the features
// wazero enables by default, or a malformed body. The caller then falls back to wazero's
// own interruption (WithCloseOnContextDone), which is correct but slower.
func instrument(bin []byte) ([]byte, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) || !bytes.Equal(bin[4:8], []byte{1, 0, 0, 0}) {
		return nil, fmt.Errorf("%w: not a wasm 1.0 binary", errNoRewrite)
	}
	type section struct {
		id      byte
		payload []byte
	}
	var secs []section
	r := &reader{b: bin, p: 8}
	for r.p < len(r.b) {
		id := r.byte()
		n := r.u32()
		payload := r.bytes(int(n))
		if r.err != nil {
			return nil, r.err
		}
		secs = append(secs, section{id, payload})
	}
	importedGlobals, definedGlobals := uint32(0), uint32(0)
	hasGlobal, hasExport := false, false
	for _, s := range secs {
		switch s.id {
		case 8:
			return nil, fmt.Errorf("%w: start section", errNoRewrite)
		case 2:
			n, err := countImportedGlobals(s.payload)
			if err != nil {
				return nil, err
			}
			importedGlobals = n
		case 6:
			hasGlobal = true
			sr := &reader{b: s.payload}
			definedGlobals = sr.u32()
			if sr.err != nil {
				return nil, sr.err
			}
		case 7:
			hasExport = true
		}
	}
	if !hasExport {
		return nil, fmt.Errorf("%w: no export section", errNoRewrite)
	}
	fuel := importedGlobals + definedGlobals
	g := fuel + 1
	scratch, growFailed := g+1, g+2
	check := checkCode(fuel, g)
	grow := growCode(scratch, growFailed)
	newGlobals := []byte{
		0x7f, 0x01, 0x41, 0x80, 0x08, 0x0b, // fuel: i32, mutable, i32.const checkEvery, end
		0x7f, 0x01, 0x41, 0x00, 0x0b, // deadline: i32, mutable, i32.const 0, end
		0x7f, 0x01, 0x41, 0x00, 0x0b, // scratch: i32, mutable, i32.const 0, end
		0x7f, 0x01, 0x41, 0x00, 0x0b, // grow_failed: i32, mutable, i32.const 0, end
	}
	const added = 4

	var out bytes.Buffer
	out.Write(bin[:8])
	emit := func(id byte, payload []byte) {
		out.WriteByte(id)
		out.Write(uleb(uint32(len(payload))))
		out.Write(payload)
	}
	globalDone := false
	for _, s := range secs {
		// Sections are ordered by id except custom (0) and data count (12, before code).
		if !hasGlobal && !globalDone && s.id != 0 && order(s.id) > order(6) {
			emit(6, append(uleb(added), newGlobals...))
			globalDone = true
		}
		switch s.id {
		case 6:
			sr := &reader{b: s.payload}
			n := sr.u32()
			emit(6, append(append(uleb(n+added), s.payload[sr.p:]...), newGlobals...))
		case 7:
			sr := &reader{b: s.payload}
			n := sr.u32()
			p := append(uleb(n+2), s.payload[sr.p:]...)
			p = append(append(p, uleb(uint32(len(deadlineExport)))...), deadlineExport...)
			p = append(append(p, 0x03), uleb(g)...)
			p = append(append(p, uleb(uint32(len(growFailedExport)))...), growFailedExport...)
			p = append(append(p, 0x03), uleb(growFailed)...)
			emit(7, p)
		case 10:
			code, err := instrumentCode(s.payload, check, grow)
			if err != nil {
				return nil, err
			}
			emit(10, code)
		default:
			emit(s.id, s.payload)
		}
	}
	return out.Bytes(), nil
}

// checkEvery is how many loop iterations pass between two exits to Go (1024, the value
// encoded in the fuel global's initializer and in checkCode).
const checkEvery = 1024

// checkCode is the code inserted after every loop instruction (see instrument).
func checkCode(fuel, deadline uint32) []byte {
	f, d := uleb(fuel), uleb(deadline)
	var c []byte
	c = append(append(append(c, 0x23), f...), 0x41, 0x01, 0x6b) // global.get fuel; i32.const 1; i32.sub
	c = append(append(append(c, 0x24), f...), 0x23)             // global.set fuel; global.get fuel
	c = append(append(c, f...), 0x45, 0x04, 0x40)               // i32.eqz; if
	c = append(append(c, 0x41, 0x80, 0x08, 0x24), f...)         // i32.const 1024; global.set fuel
	c = append(c, 0x41, 0x00, 0x40, 0x00, 0x1a, 0x23)           // i32.const 0; memory.grow 0; drop; global.get
	c = append(append(c, d...), 0x04, 0x40, 0x00, 0x0b, 0x0b)   // deadline; if; unreachable; end; end
	return c
}

// growCode is the code inserted after every memory.grow (see instrument): with the grow's
// result r on the stack, "scratch = r; if r == -1 { grow_failed = 1; unreachable }; push r".
// A grow beyond the memory limit ends the call at once, classified "memory limit": a
// guest that kept asking (a grow loop) would otherwise spin until its time limit and be
// reported as a timeout (docs/plugins.md, "Memory limits").
func growCode(scratch, failed uint32) []byte {
	sc, f := uleb(scratch), uleb(failed)
	var c []byte
	c = append(append(append(c, 0x24), sc...), 0x23)                      // global.set scratch; global.get
	c = append(append(append(append(c, sc...), 0x23), sc...), 0x41, 0x7f) // scratch; global.get scratch; i32.const -1
	c = append(c, 0x46, 0x04, 0x40, 0x41, 0x01, 0x24)                     // i32.eq; if; i32.const 1; global.set
	c = append(append(c, f...), 0x00, 0x0b)                               // grow_failed; unreachable; end
	return c
}

// order is a section's position in the binary format's required order.
func order(id byte) int {
	switch id {
	case 12: // data count comes between element (9) and code (10)
		return 95
	case 10:
		return 100
	case 11:
		return 110
	}
	return int(id) * 10
}

func countImportedGlobals(p []byte) (uint32, error) {
	r := &reader{b: p}
	n := r.u32()
	var globals uint32
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.bytes(int(r.u32())) // module
		r.bytes(int(r.u32())) // name
		switch kind := r.byte(); kind {
		case 0: // func
			r.u32()
		case 1: // table: reftype, limits
			r.byte()
			r.limits()
		case 2: // memory
			r.limits()
		case 3: // global: valtype, mut
			r.byte()
			r.byte()
			globals++
		default:
			return 0, fmt.Errorf("%w: import kind %d", errNoRewrite, kind)
		}
	}
	return globals, r.err
}

func instrumentCode(p []byte, check, grow []byte) ([]byte, error) {
	r := &reader{b: p}
	n := r.u32()
	out := uleb(n)
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		body := r.bytes(int(size))
		if r.err != nil {
			return nil, r.err
		}
		nb, err := instrumentBody(body, check, grow)
		if err != nil {
			return nil, fmt.Errorf("function body %d: %w", i, err)
		}
		out = append(append(out, uleb(uint32(len(nb)))...), nb...)
	}
	return out, r.err
}

func instrumentBody(body []byte, check, grow []byte) ([]byte, error) {
	r := &reader{b: body}
	groups := r.u32()
	for i := uint32(0); i < groups; i++ {
		r.u32()  // count
		r.byte() // valtype
	}
	if r.err != nil {
		return nil, r.err
	}
	out := make([]byte, 0, len(body)+len(body)/8)
	out = append(out, body[:r.p]...)
	for r.p < len(r.b) {
		start := r.p
		op := r.byte()
		loop := op == 0x03
		if err := r.skipImmediates(op); err != nil {
			return nil, err
		}
		if r.err != nil {
			return nil, r.err
		}
		out = append(out, body[start:r.p]...)
		switch {
		case loop:
			out = append(out, check...)
		case op == 0x40: // memory.grow
			out = append(out, grow...)
		}
	}
	return out, nil
}

// reader decodes the binary format; the first error sticks.
type reader struct {
	b   []byte
	p   int
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated or malformed at byte %d", errNoRewrite, r.p)
	}
	r.p = len(r.b)
}

func (r *reader) byte() byte {
	if r.p >= len(r.b) {
		r.fail()
		return 0
	}
	c := r.b[r.p]
	r.p++
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.p+n > len(r.b) {
		r.fail()
		return nil
	}
	s := r.b[r.p : r.p+n]
	r.p += n
	return s
}

// leb skips or reads an LEB128 number of at most maxBytes bytes.
func (r *reader) leb(maxBytes int) uint64 {
	var v uint64
	for i := 0; i < maxBytes; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail()
	return 0
}

func (r *reader) u32() uint32 { return uint32(r.leb(5)) }

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

func (r *reader) blockType() {
	if r.p >= len(r.b) {
		r.fail()
		return
	}
	switch r.b[r.p] {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		r.p++
	default:
		r.leb(5) // s33 type index
	}
}

func (r *reader) memarg() {
	align := r.u32()
	if align&0x40 != 0 { // multi-memory: a memory index follows
		r.u32()
	}
	r.leb(10) // offset (u64 for memory64)
}

// skipImmediates advances past the immediates of op (the features wazero enables by
// default: MVP, sign extension, saturating conversions, multi-value, bulk memory,
// reference types, SIMD). Anything else is refused.
func (r *reader) skipImmediates(op byte) error {
	switch {
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
	case op >= 0x02 && op <= 0x04:
		r.blockType()
	case op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12 || op == 0xd2 || (op >= 0x20 && op <= 0x26):
		r.u32()
	case op == 0x0e:
		n := r.u32()
		for i := uint32(0); i <= n && r.err == nil; i++ {
			r.u32()
		}
	case op == 0x11 || op == 0x13:
		r.u32()
		r.u32()
	case op == 0x1c:
		n := r.u32()
		r.bytes(int(n))
	case op >= 0x28 && op <= 0x3e:
		r.memarg()
	case op == 0x3f || op == 0x40:
		r.u32()
	case op == 0x41:
		r.leb(5)
	case op == 0x42:
		r.leb(10)
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op >= 0x45 && op <= 0xc4:
	case op == 0xd0:
		r.blockType() // a reftype byte or a heap type
	case op == 0xfc:
		switch sub := r.u32(); {
		case sub <= 7:
		case sub == 8 || sub == 10 || sub == 12 || sub == 14:
			r.u32()
			r.u32()
		case sub == 9 || sub == 11 || sub == 13 || (sub >= 15 && sub <= 17):
			r.u32()
		default:
			return fmt.Errorf("%w: opcode 0xfc %d", errNoRewrite, sub)
		}
	case op == 0xfd:
		switch sub := r.u32(); {
		case sub <= 11 || sub == 92 || sub == 93:
			r.memarg()
		case sub == 12 || sub == 13:
			r.bytes(16)
		case sub >= 21 && sub <= 34:
			r.byte()
		case sub >= 84 && sub <= 91:
			r.memarg()
			r.byte()
		case sub <= 275:
		default:
			return fmt.Errorf("%w: opcode 0xfd %d", errNoRewrite, sub)
		}
	default:
		return fmt.Errorf("%w: opcode %#x", errNoRewrite, op)
	}
	return nil
}

func uleb(v uint32) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(out, c)
	}
}
