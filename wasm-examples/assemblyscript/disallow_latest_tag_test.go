package asexamples_test

import (
	"testing"

	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/wasm-examples/go/disallow-latest-tag/latesttest"
)

// The AssemblyScript disallow-latest-tag gives the Go version's verdict and message on
// every request, through the API server's admission host.
func TestDisallowLatestTagMatchesGo(t *testing.T) {
	path := wasmbuild.Script(t, "wasm-examples/assemblyscript/disallow-latest-tag")
	importsOnlyWasmkube(t, path)
	latesttest.MatchesGo(t, "AssemblyScript", admitwasmtest.Load(t, "disallow-latest-tag-as", path, ""))
}
