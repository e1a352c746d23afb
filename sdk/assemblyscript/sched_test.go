package assdk_test

import (
	"testing"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmtest/kittest"
)

// Every scheduler runner (PreFilter with Skip and a node set, Filter's codes, PostFilter's
// nomination, Score's raw scores, NormalizeScore) through the plugin kit's cycle, on the
// case file both SDKs' test modules must pass (it lives beside the Rust one).
func TestSchedulerRunners(t *testing.T) {
	kittest.Cases(t, wasmbuild.Script(t, "sdk/assemblyscript/testdata/sched"), "sdk/rust/testdata/sched/cases.yaml")
}
