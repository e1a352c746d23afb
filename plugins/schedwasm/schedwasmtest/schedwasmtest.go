// Package schedwasmtest loads a wasm plugin module as the scheduler does, for the tests
// of the example plugins.
package schedwasmtest

import (
	"context"
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// Load compiles the module at path on a fresh host (its compilation cache in a test
// directory) and returns the factory that builds the plugin named name from its args.
func Load(t testing.TB, name, path string) framework.PluginFactory {
	t.Helper()
	h, err := wasmhost.New(wasmhost.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := schedwasm.NewLoader(h).Load(context.Background(), config.WasmPlugin{Name: name, Path: path}, "")
	if err != nil {
		t.Fatal(err)
	}
	return f
}
