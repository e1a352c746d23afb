package apiserver

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
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
				Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
			}, append(requestLabelNames, "code")),
			latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:    "apiserver_request_duration_seconds",
				Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component (WATCH excluded).",
				Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
			}, requestLabelNames),
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

// requestLabelNames are upstream's labels of the request metrics (code comes on top for
// apiserver_request_total), so dashboards written for Kubernetes work unchanged.
var requestLabelNames = []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}

// requestLabels describe one request for the metrics.
type requestLabels struct {
	verb, dryRun, group, version, resource, subresource, scope string
}

func (l requestLabels) values() []string {
	return []string{l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, "apiserver"}
}

// labelsFor describes a resource request as upstream does: scope is "resource" for a
// named object or a create, "namespace" for a collection in a namespace, "cluster" for a
// cluster-wide collection; dry_run is the sorted, comma-joined dryRun values.
func labelsFor(verb string, ri *handlers.RequestInfo, dryRun []string) requestLabels {
	l := requestLabels{verb: verb, group: ri.Resource.GVR.Group, version: ri.Resource.GVR.Version,
		resource: ri.Resource.GVR.Resource, subresource: ri.Subresource}
	switch {
	case ri.Name != "" || ri.Verb == "create":
		l.scope = "resource"
	case ri.Namespace != "":
		l.scope = "namespace"
	default:
		l.scope = "cluster"
	}
	if len(dryRun) > 0 {
		d := append([]string(nil), dryRun...)
		sort.Strings(d)
		l.dryRun = strings.Join(d, ",")
	}
	return l
}

func (m *apiMetrics) observe(l requestLabels, code int, d time.Duration) {
	m.requests.WithLabelValues(append(l.values(), strconv.Itoa(code))...).Inc()
	if l.verb != "WATCH" && l.verb != "CONNECT" {
		m.latency.WithLabelValues(l.values()...).Observe(d.Seconds())
	}
}
