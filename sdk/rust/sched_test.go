package rustsdk_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// Every scheduler runner (PreFilter with Skip and a node set, Filter's codes, PostFilter's
// nomination, Score's raw scores, NormalizeScore) through the plugin kit's cycle, on the
// case file both SDKs' test modules must pass.
func TestSchedulerRunners(t *testing.T) {
	ctx := context.Background()
	p, err := wasmtest.Open(ctx, wasmbuild.Script(t, "sdk/rust/testdata/sched"), wasmtest.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	f, err := wasmtest.LoadFile(filepath.Join(wasmbuild.Root(), "sdk/rust/testdata/sched/cases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Run(ctx, f) {
		if !r.Passed {
			t.Errorf("%s: %s", r.Name, r.Diff)
		}
	}
}
