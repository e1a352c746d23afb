package config_test

import (
	"os"
	"testing"

	"github.com/wasmkube/wasmkube/kubelet/config"
)

// FuzzParse: any config file is either accepted or refused with an error, never a panic.
// `go test` runs the seeds; `make fuzz` runs it for longer.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../../examples/wasmkube.yaml"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"kubelet:\n  probePlugins: [{name: p, path: /x.wasm, timeout: -1s}]\n",
		"kubelet:\n  preStopPlugins: [{name: \"\", args: {a: [1, {b: 2}]}}]\n",
		"kubelet: 3\n", "kubelet: &a [*a]\n", "", "kubelet:\n  bogus: true\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = config.Parse(data)
	})
}
