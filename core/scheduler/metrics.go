package scheduler

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/queue"
)

// metrics are the scheduler's Prometheus series, with upstream's names where upstream
// has one. Each Scheduler has its own registry, so several can live in one process.
type metrics struct {
	reg             *prometheus.Registry
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	pluginDuration  *prometheus.HistogramVec
	pointDuration   *prometheus.HistogramVec
	preemptions     prometheus.Counter
	podAttempts     prometheus.Histogram
	podSLI          *prometheus.HistogramVec
	reloads         *prometheus.CounterVec
	leader          prometheus.Gauge
	batch           *prometheus.CounterVec
}

func newMetrics(q *queue.Queue) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_schedule_attempts_total",
		Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
	}, []string{"result", "profile"})
	m.attemptDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_scheduling_attempt_duration_seconds",
		Help:    "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result", "profile"})
	m.pluginDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_plugin_execution_duration_seconds",
		Help:    "Duration for running a plugin at a specific extension point (sampled: one cycle in ten).",
		Buckets: prometheus.ExponentialBuckets(0.00001, 1.5, 20),
	}, []string{"plugin", "extension_point", "status"})
	m.pointDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_framework_extension_point_duration_seconds",
		Help:    "Latency for running all plugins of a specific extension point.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 12),
	}, []string{"extension_point", "status", "profile"})
	m.preemptions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "scheduler_preemption_attempts_total", Help: "Total preemption attempts in the cluster till now.",
	})
	m.podAttempts = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "scheduler_pod_scheduling_attempts", Help: "Number of attempts to successfully schedule a pod.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 5),
	})
	m.podSLI = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_pod_scheduling_sli_duration_seconds",
		Help:    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue until it is bound.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 20),
	}, []string{"attempts"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wasmkube_scheduler_config_reloads_total",
		Help: "Reloads of the scheduler section of the config file, by result (success, failure).",
	}, []string{"result"})
	m.leader = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "wasmkube_scheduler_is_leader", Help: "1 while this scheduler holds the leader lease (or runs without leader election).",
	})
	m.batch = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_batch_attempts_total",
		Help: "Scheduling cycles of profiles that batch, by what batching did: reused (placed from a kept ranking), stored (a full pass kept), unsignable, or flush_<reason> (a kept ranking dropped).",
	}, []string{"profile", "result"})
	pending := func(which int) func() float64 {
		return func() float64 {
			a, b, u := q.Lens()
			return float64([]int{a, b, u}[which])
		}
	}
	m.reg.MustRegister(m.attempts, m.attemptDuration, m.pluginDuration, m.pointDuration,
		m.preemptions, m.podAttempts, m.podSLI, m.reloads, m.leader, m.batch,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scheduler_pending_pods", Help: "Number of pending pods, by the queue type.", ConstLabels: prometheus.Labels{"queue": "active"}}, pending(0)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scheduler_pending_pods", Help: "Number of pending pods, by the queue type.", ConstLabels: prometheus.Labels{"queue": "backoff"}}, pending(1)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scheduler_pending_pods", Help: "Number of pending pods, by the queue type.", ConstLabels: prometheus.Labels{"queue": "unschedulable"}}, pending(2)),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// ObservePlugin implements runtime.Metrics.
func (m *metrics) ObservePlugin(point, plugin string, code framework.Code, d time.Duration) {
	m.pluginDuration.WithLabelValues(plugin, point, code.String()).Observe(d.Seconds())
}

// ObservePoint implements runtime.Metrics.
func (m *metrics) ObservePoint(profile, point string, code framework.Code, d time.Duration) {
	m.pointDuration.WithLabelValues(point, code.String(), profile).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// MetricsGatherer is the scheduler's registry, for a caller that serves it together with
// other series (the wasm host's).
func (s *Scheduler) MetricsGatherer() prometheus.Gatherer { return s.metrics.reg }
