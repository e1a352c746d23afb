// Package kittest runs a plugin's case file from a Go test, as `wasmkube plugin test`
// does from the command line: SDK users test their plugins in `go test` with it.
package kittest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// Cases runs every case of the case file cases (relative to the repository root when not
// absolute) on the module at path and fails t for each one that does not pass, with its
// diff. The call limit is 1 s: a test checks answers, not speed.
func Cases(t testing.TB, path, cases string) {
	t.Helper()
	if !filepath.IsAbs(cases) {
		cases = filepath.Join(wasmbuild.Root(), cases)
	}
	f, err := wasmtest.LoadFile(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := wasmtest.Open(ctx, path, wasmtest.Options{Timeout: time.Second, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for _, r := range p.Run(ctx, f) {
		if !r.Passed {
			t.Errorf("%s: %s", r.Name, strings.Join(r.Diff, "; "))
		}
	}
}
