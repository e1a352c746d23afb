package webhook

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Rejection error types, upstream's (k8s.io/apiserver/pkg/admission/metrics).
const (
	rejectionCallingWebhook = "calling_webhook_error"
	rejectionInternal       = "apiserver_internal_error"
	rejectionNoError        = "no_error"
)

// metrics are upstream's webhook metrics, with its names, labels and buckets, so
// dashboards made for kube-apiserver read ours. Upstream registers them in
// component-base's global registry at import; ours go to the registerer the caller
// passes (the API server's /metrics serves the default one).
type metrics struct {
	duration  *prometheus.HistogramVec
	rejection *prometheus.CounterVec
	failOpen  *prometheus.CounterVec
	requests  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_admission_duration_seconds",
			Help:    "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25},
		}, []string{"name", "type", "operation", "rejected"}),
		rejection: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_rejection_count",
			Help: "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
		}, []string{"name", "type", "operation", "error_type", "rejection_code"}),
		failOpen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_fail_open_count",
			Help: "Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).",
		}, []string{"name", "type"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_request_total",
			Help: "Admission webhook request total, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
		}, []string{"name", "type", "operation", "code", "rejected"}),
	}
	if reg == nil {
		return m, nil
	}
	// A second plugin on one registerer (a server restarted in the same process) shares
	// the first one's series.
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(m.duration); errors.As(err, &are) {
		m.duration = are.ExistingCollector.(*prometheus.HistogramVec)
	} else if err != nil {
		return nil, err
	}
	for _, c := range []**prometheus.CounterVec{&m.rejection, &m.failOpen, &m.requests} {
		if err := reg.Register(*c); errors.As(err, &are) {
			*c = are.ExistingCollector.(*prometheus.CounterVec)
		} else if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(name, typ, op string, elapsed time.Duration, rejected bool, code int) {
	m.requests.WithLabelValues(name, typ, op, strconv.Itoa(min(code, 600)), strconv.FormatBool(rejected)).Inc()
	m.duration.WithLabelValues(name, typ, op, strconv.FormatBool(rejected)).Observe(elapsed.Seconds())
}

func (m *metrics) reject(name, typ, op, errorType string, code int) {
	m.rejection.WithLabelValues(name, typ, op, errorType, strconv.Itoa(min(code, 600))).Inc()
}
