package storage

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestDuration has upstream kube-apiserver's name and labels, so dashboards built for
// Kubernetes read it unchanged: operation (get, create, update, delete, list, count,
// watch-start) and type (the resource).
var requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "etcd_request_duration_seconds",
	Help:    "Etcd request latency in seconds for each operation and object type.",
	Buckets: []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.5, 2, 3, 5, 10, 15, 30, 60},
}, []string{"operation", "type"})

// retries counts etcd round trips sent again after a fault (docs/storage.md, "etcd
// faults"): reason is not_applied (etcd refused it: no leader, leader changed) or unknown
// (it may have been applied; only reads and compare-and-swaps are sent again).
var retries = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "wasmkube_storage_etcd_retries_total",
	Help: "Etcd requests sent again after a fault, by operation, object type and what the fault proved.",
}, []string{"operation", "type", "reason"})

func init() {
	if err := prometheus.DefaultRegisterer.Register(retries); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			panic(err)
		}
		retries = are.ExistingCollector.(*prometheus.CounterVec)
	}
	err := prometheus.DefaultRegisterer.Register(requestDuration)
	if err == nil {
		return
	}
	// Another package registered the same histogram first: share it.
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if hv, ok := are.ExistingCollector.(*prometheus.HistogramVec); ok {
			requestDuration = hv
			return
		}
	}
	panic(err)
}

// observe records one etcd round trip of operation on resource since start.
func observe(operation, resource string, start time.Time) {
	requestDuration.WithLabelValues(operation, resource).Observe(time.Since(start).Seconds())
}
