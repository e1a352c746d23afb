package apiserver

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// apiMetrics are upstream's request metrics. They are registered once per process on
// the default registry (tests run several servers in one process).
type apiMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

var (
	metricsOnce   sync.Once
	sharedMetrics *apiMetrics
)

func newMetrics() *apiMetrics {
	metricsOnce.Do(func() {
		m := &apiMetrics{
			requests: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "apiserver_request_total",
				Help: "Counter of apiserver requests broken out for each verb, resource, subresource and HTTP response code.",
			}, []string{"verb", "resource", "subresource", "code"}),
			latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:    "apiserver_request_duration_seconds",
				Help:    "Response latency distribution in seconds for each verb, resource and subresource (WATCH excluded).",
				Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
			}, []string{"verb", "resource", "subresource"}),
		}
		m.requests = registerOrReuse(m.requests).(*prometheus.CounterVec)
		m.latency = registerOrReuse(m.latency).(*prometheus.HistogramVec)
		sharedMetrics = m
	})
	return sharedMetrics
}

func registerOrReuse(c prometheus.Collector) prometheus.Collector {
	if err := prometheus.DefaultRegisterer.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			return are.ExistingCollector
		}
		panic(err)
	}
	return c
}

func (m *apiMetrics) observe(verb, resource, sub string, code int, d time.Duration) {
	m.requests.WithLabelValues(verb, resource, sub, strconv.Itoa(code)).Inc()
	if verb != "WATCH" && verb != "CONNECT" {
		m.latency.WithLabelValues(verb, resource, sub).Observe(d.Seconds())
	}
}
