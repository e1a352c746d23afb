package admitwasm

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the admission series beside upstream's
// apiserver_admission_step_admission_duration_seconds.
type metrics struct {
	duration   *prometheus.HistogramVec
	rejections *prometheus.CounterVec
	reloads    *prometheus.CounterVec
}

// durationBuckets start at 10us: an in-process policy call takes tens of microseconds.
var durationBuckets = []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wasmkube_admission_policy_duration_seconds",
			Help:    "Time of one wasm admission policy call, by policy, operation and whether it rejected the request.",
			Buckets: durationBuckets,
		}, []string{"policy", "operation", "rejected"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmkube_admission_policy_rejections_total",
			Help: "Denials by wasm admission policies, by policy and the validation action taken (Deny, Warn, Audit).",
		}, []string{"policy", "action"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmkube_admission_config_reloads_total",
			Help: "Reloads of the admission section of the config file, by result (success, failure).",
		}, []string{"result"}),
	}
	if reg != nil {
		m.duration = register(reg, m.duration)
		m.rejections = register(reg, m.rejections)
		m.reloads = register(reg, m.reloads)
	}
	return m
}

// register registers c on reg, or returns the collector of that name already there
// (several Policies in one process, as in tests, share the series).
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

func (m *metrics) observe(policy, op string, rejected bool, d time.Duration) {
	m.duration.WithLabelValues(policy, op, strconv.FormatBool(rejected)).Observe(d.Seconds())
}
