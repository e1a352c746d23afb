package scheduler

import (
	"reflect"
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
)

// TestProfileChanges: a reload that swaps a profile's Score plugin (the example config's
// "swap pack for spread") is a swap in words; an unchanged profile is none.
func TestProfileChanges(t *testing.T) {
	prof := func(score ...config.Plugin) config.Profile {
		return config.Profile{SchedulerName: "default-scheduler", Plugins: &config.Plugins{Score: config.PluginSet{Enabled: score}}}
	}
	pack, spread := config.Plugin{Name: "pack", Weight: 2}, config.Plugin{Name: "spread", Weight: 2}
	if got := profileChanges(prof(pack), prof(pack)); len(got) != 0 {
		t.Errorf("unchanged profile: %q", got)
	}
	want := []string{"profile default-scheduler: score [pack x2] -> [spread x2]"}
	if got := profileChanges(prof(pack), prof(spread)); !reflect.DeepEqual(got, want) {
		t.Errorf("pack -> spread: %q, want %q", got, want)
	}
	args := prof(pack)
	args.PluginConfig = []config.PluginConfig{{Name: "pack", Args: []byte(`{"x":1}`)}}
	if got := profileChanges(prof(pack), args); len(got) != 1 || got[0] != "profile default-scheduler: pluginConfig (plugin args)" {
		t.Errorf("args: %q", got)
	}
}
