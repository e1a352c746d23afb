package config_test

import (
	"os"
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
)

// FuzzParse: any config file is either accepted or refused with an error, never a panic;
// an accepted one parses the same way again. `go test` runs the seeds (the example config
// among them); `make fuzz` runs it for longer.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../../../examples/wasmkube.yaml"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"scheduler:\n  profiles:\n  - schedulerName: default-scheduler\n",
		"scheduler:\n  profiles:\n  - plugins: {filter: {enabled: [{name: x, weight: -1}]}}\n",
		"scheduler:\n  wasmPlugins: [{name: p, path: /nonexistent.wasm, timeout: 1h, memoryLimit: 1Ti}]\n",
		"scheduler: [1, 2]\n", "scheduler: &a {x: *a}\n", "{}", "", "scheduler:\n  unknownKey: 1\n",
		"scheduler:\n  profiles:\n  - pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Bogus}}}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := config.Parse(data); err != nil {
			return
		}
		if _, err := config.Parse(data); err != nil {
			t.Fatalf("accepted once, refused the second time: %v", err)
		}
	})
}
