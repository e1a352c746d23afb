package wasmhost

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// Every module we ship or test with is rewritten, and the result is valid wasm that
// exports the deadline flag.
func TestInstrumentProducesValidModules(t *testing.T) {
	srcs := []string{
		"wat:plugins/testdata/loop.wat", "wat:plugins/testdata/stateful.wat", "wat:plugins/testdata/garbage.wat",
		"wat:wasm-examples/wat/drain-filter/drain-filter.wat",
		"go:wasm-examples/go/node-resources-fit", "go:wasm-examples/go/pack-score", "go:sdk/go/internal/testguest",
	}
	ctx := context.Background()
	// The interpreter validates as the compiler does, in a fraction of the time.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	for _, src := range srcs {
		var path string
		if src[:3] == "go:" {
			path = wasmbuild.Go(t, src[3:])
		} else {
			path = wasmbuild.WAT(t, src[4:])
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out, err := instrument(bin)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		loops := bytes.Count(out, []byte{0x41, 0x00, 0x40, 0x00, 0x1a}) // the inserted "memory.grow 0; drop"
		if loops == 0 || len(out) <= len(bin) {
			t.Errorf("%s: no check inserted (%d -> %d bytes)", src, len(bin), len(out))
		}
		if _, err := rt.CompileModule(ctx, out); err != nil {
			t.Errorf("%s: rewritten module does not compile: %v", src, err)
			continue
		}
		if !bytes.Contains(out, []byte(deadlineExport)) {
			t.Errorf("%s: %s not exported", src, deadlineExport)
		}
	}
}

func TestInstrumentRefusesWhatItCannotRewrite(t *testing.T) {
	for _, tt := range []struct {
		name string
		bin  []byte
	}{
		{"empty", nil},
		{"text", []byte("(module)")},
		{"truncated", []byte("\x00asm\x01\x00\x00\x00\x0a\x05\x01")},
		{"unknown opcode", []byte("\x00asm\x01\x00\x00\x00" + "\x01\x04\x01\x60\x00\x00" + "\x03\x02\x01\x00" + "\x07\x05\x01\x01f\x00\x00" + "\x0a\x05\x01\x03\x00\xfe\x0b")},
	} {
		if _, err := instrument(tt.bin); !errors.Is(err, errNoRewrite) {
			t.Errorf("%s: got %v, want errNoRewrite", tt.name, err)
		}
	}
}
