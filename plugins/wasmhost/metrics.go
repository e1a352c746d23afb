package wasmhost

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// newFailures makes wasmkube_plugin_failures_total, registered on reg when it is set (or
// the series already registered there by another host).
func newFailures(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wasmkube_plugin_failures_total",
		Help: "Failed wasm plugin calls (trap, timeout, memory limit, bad pointer, garbage result, plugin error), by plugin and entry point.",
	}, []string{"plugin", "kind"})
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
	}
	return c
}

// Failures returns the host's wasmkube_plugin_failures_total.
func (h *Host) Failures() *prometheus.CounterVec { return h.failures }
