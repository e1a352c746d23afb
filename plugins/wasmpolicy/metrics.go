package wasmpolicy

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the series every policy kind shares: which policies are in force, of which
// tier and mode, and what Monitor mode recorded. Each kind's adapter makes them with
// NewMetrics on its registerer; several adapters in one process share the collectors.
type Metrics struct {
	inForce *prometheus.GaugeVec
	// MonitorDecisions counts the would-be verdicts of admission policies in Monitor mode,
	// by policy and verdict (allow, deny, patch, error).
	MonitorDecisions *prometheus.CounterVec
	// MonitorComparisons and MonitorDisagreements count the scheduling cycles and probes a
	// Monitor policy was compared on, and those where it would have decided otherwise
	// (another node, another probe result), by policy and component.
	MonitorComparisons   *prometheus.CounterVec
	MonitorDisagreements *prometheus.CounterVec

	mu   sync.Mutex
	last map[string][]InForce // by component
}

// InForce is one policy in force in a component.
type InForce struct {
	Policy, Tier, Mode string
}

// Verdicts of MonitorDecisions.
const (
	VerdictAllow = "allow"
	VerdictDeny  = "deny"
	VerdictPatch = "patch"
	VerdictError = "error"
)

// NewMetrics returns the shared series, registered on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		inForce: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wasmkube_policy_in_force",
			Help: "1 for each wasm policy in force in a component, by component, policy, tier (file: the config file; api: a WasmPolicy) and mode (Enforce, Monitor).",
		}, []string{"component", "policy", "tier", "mode"}),
		MonitorDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmkube_policy_monitor_decisions_total",
			Help: "Would-be verdicts of admission policies in Monitor mode (recorded, never applied), by policy and verdict (allow, deny, patch, error).",
		}, []string{"policy", "verdict"}),
		MonitorComparisons: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmkube_policy_monitor_comparisons_total",
			Help: "Scheduling cycles and probes on which a policy in Monitor mode ran beside the enforced ones, by policy and component.",
		}, []string{"policy", "component"}),
		MonitorDisagreements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmkube_policy_monitor_disagreements_total",
			Help: "Of those, the ones where the Monitor policy would have decided otherwise (another node picked, another probe result), by policy and component.",
		}, []string{"policy", "component"}),
		last: map[string][]InForce{},
	}
	if reg != nil {
		m.inForce = register(reg, m.inForce)
		m.MonitorDecisions = register(reg, m.MonitorDecisions)
		m.MonitorComparisons = register(reg, m.MonitorComparisons)
		m.MonitorDisagreements = register(reg, m.MonitorDisagreements)
	}
	return m
}

// SetInForce replaces the component's policies in force.
func (m *Metrics) SetInForce(component string, policies []InForce) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.last[component] {
		m.inForce.DeleteLabelValues(component, p.Policy, p.Tier, p.Mode)
	}
	for _, p := range policies {
		m.inForce.WithLabelValues(component, p.Policy, p.Tier, p.Mode).Set(1)
	}
	m.last[component] = policies
}

// register registers c on reg, or returns the collector of that name already there.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) T {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing
			}
		}
	}
	return c
}

// InForceGauge is wasmkube_policy_in_force (for tests and reports).
func (m *Metrics) InForceGauge() *prometheus.GaugeVec { return m.inForce }
