package wasmhost_test

import (
	"context"
	"testing"

	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// A retired set closes nothing under its users: its plugins are let go when its last user
// releases it, and a plugin that the next set kept stays open until that set goes too.
func TestSetsCloseWhatTheLastUserLetsGo(t *testing.T) {
	ctx := context.Background()
	h, _ := newHost(t)
	loaded := func(name, wat string) (*wasmhost.Loaded, *wasmhost.Pool) {
		l := wasmhost.NewLoaded(load(t, h, name, wat, wasmhost.LoadOptions{}))
		p, err := l.NewPool(ctx, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		return l, p
	}
	kept, keptPool := loaded("kept", "trap.wat")
	dropped, droppedPool := loaded("dropped", "loop.wat")
	call := func(p *wasmhost.Pool) error {
		return newCall(schedwasm.Filter, testPod("p", nil), testNodes("n")).Do(ctx, p)
	}

	first := wasmhost.NewSet(kept, dropped)
	if !first.Acquire() {
		t.Fatal("a set in force refused a user")
	}
	second := wasmhost.NewSet(kept) // a config swap keeps one plugin, drops the other
	first.Retire()
	if first.Acquire() {
		t.Fatal("a retired set took a new user")
	}
	// The user of the retired set still calls both of its plugins.
	if err := call(droppedPool); err != nil {
		t.Fatalf("a plugin of a retired set in use: %v", err)
	}
	if dropped.Closed() || kept.Closed() {
		t.Fatal("a plugin closed while a user of its set was running")
	}
	first.Release()
	if !dropped.Closed() {
		t.Error("the dropped plugin is open after the last user of its set let go")
	}
	if kept.Closed() {
		t.Fatal("the plugin the new set kept was closed with the old set")
	}
	if err := call(keptPool); err != nil {
		t.Fatalf("the kept plugin: %v", err)
	}
	second.Retire()
	if !kept.Closed() {
		t.Error("the kept plugin is open after its last set was retired without users")
	}
	if n := keptPool.Live() + droppedPool.Live(); n != 0 {
		t.Errorf("%d instances left", n)
	}
}
