package wasmhost

import "github.com/prometheus/client_golang/prometheus"

// Failures counts failed plugin calls by plugin name and entry point (kind), whatever
// the plugin's failurePolicy. It is registered with the default Prometheus registry.
var Failures = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "wasmkube_plugin_failures_total",
	Help: "Failed wasm plugin calls (trap, timeout, memory limit, bad pointer, garbage result, plugin error), by plugin and entry point.",
}, []string{"plugin", "kind"})

func init() { prometheus.MustRegister(Failures) }
