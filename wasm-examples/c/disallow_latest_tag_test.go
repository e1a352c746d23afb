package cexamples_test

import (
	"testing"

	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/wasm-examples/go/disallow-latest-tag/latesttest"
)

// The C disallow-latest-tag gives the Go version's verdict and message on every request.
func TestDisallowLatestTagMatchesGo(t *testing.T) {
	latesttest.MatchesGo(t, "C", admitwasmtest.Load(t, "disallow-latest-tag-c", wasmbuild.Script(t, "wasm-examples/c/disallow-latest-tag"), ""))
}
