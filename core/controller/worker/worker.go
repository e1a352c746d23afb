// Package worker is the loop every wasmkube controller runs: a rate-limited work queue of
// object keys, N workers that reconcile one key at a time, retries with exponential back-off
// on error, and Prometheus metrics for queue depth and reconcile duration.
//
// The queue is client-go's: a key that is added while it is being reconciled is marked dirty
// and handed out again after Done, so no update is lost and no key is reconciled by two
// workers at once.
package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Reconcile brings the object named by key to its desired state. It must be idempotent:
// the same key may be reconciled many times. A returned error requeues the key with
// back-off; RequeueAfter asks for another pass later without counting as a failure.
type Reconcile func(ctx context.Context, key string) error

// RequeueAfter is returned by a Reconcile that succeeded but wants to look again after a
// delay (a deadline that has not yet expired, a pod that is not yet available long enough).
type RequeueAfter time.Duration

func (r RequeueAfter) Error() string { return "requeue after " + time.Duration(r).String() }

// Queue is a named rate-limited queue of string keys.
type Queue = workqueue.TypedRateLimitingInterface[string]

// NewQueue returns a rate-limited queue whose metrics carry name (5 ms to 1000 s per-key
// exponential back-off, and an overall 50 qps / 500 burst bucket for retries).
func NewQueue(name string) Queue { return NewQueueWithClock(name, nil) }

// NewQueueWithClock is NewQueue whose delays (AddAfter, back-off) run on clk, so that a
// controller that waits for times of day (CronJob) can be tested with a fake clock. A nil
// clk is the real clock.
func NewQueueWithClock(name string, clk clock.WithTicker) Queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk},
	)
}

// Run starts workers goroutines that reconcile keys from q until ctx is done, then shuts
// the queue down and waits for them.
func Run(ctx context.Context, name string, q Queue, workers int, reconcile Reconcile, log *slog.Logger) {
	if workers < 1 {
		workers = 1
	}
	if log == nil {
		log = slog.Default()
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx, name, q, reconcile, log) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func processNext(ctx context.Context, name string, q Queue, reconcile Reconcile, log *slog.Logger) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	start := time.Now()
	err := reconcile(ctx, key)
	result := "success"
	var again RequeueAfter
	switch {
	case err == nil:
		q.Forget(key)
	case errors.As(err, &again):
		q.Forget(key)
		q.AddAfter(key, time.Duration(again))
	default:
		result = "error"
		if ctx.Err() == nil {
			log.Debug("reconcile failed, retrying", "controller", name, "key", key, "err", err)
		}
		q.AddRateLimited(key)
	}
	reconcileDuration.WithLabelValues(name, result).Observe(time.Since(start).Seconds())
	return true
}

var reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: "wasmkube",
	Subsystem: "controller",
	Name:      "reconcile_duration_seconds",
	Help:      "Time one reconcile of one key took, by controller and result.",
	Buckets:   prometheus.ExponentialBuckets(0.0005, 2, 16),
}, []string{"controller", "result"})

// queueProm is the process-wide work-queue metrics provider. client-go reads its provider
// without a lock whenever a queue is created, so it is installed at init, before any
// goroutine can create a queue; it then covers every client-go queue in the process.
var queueProm = newQueueMetrics()

func init() { workqueue.SetProvider(queueProm) }

// RegisterMetrics registers the reconcile-duration histogram and the work-queue metrics
// (depth, adds, queue latency, work duration, unfinished work, retries) on reg. It may be
// called for several registries; registering twice on one is harmless.
func RegisterMetrics(reg prometheus.Registerer) {
	p := queueProm
	for _, c := range []prometheus.Collector{reconcileDuration, p.depth, p.adds, p.latency, p.workDuration, p.unfinished, p.longest, p.retries} {
		_ = reg.Register(c) // AlreadyRegisteredError: this registry has it already
	}
}

type queueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, workDuration      *prometheus.HistogramVec
}

func newQueueMetrics() *queueMetrics {
	const ns, sub = "wasmkube", "workqueue"
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, []string{"name"})
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, []string{"name"})
	}
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help,
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 10)}, []string{"name"})
	}
	return &queueMetrics{
		depth:        gauge("depth", "Current depth of the work queue."),
		unfinished:   gauge("unfinished_work_seconds", "Seconds of work in progress not yet observed by work_duration."),
		longest:      gauge("longest_running_processor_seconds", "Seconds the longest running reconcile has been running."),
		adds:         counter("adds_total", "Keys added to the work queue."),
		retries:      counter("retries_total", "Keys requeued with back-off."),
		latency:      hist("queue_duration_seconds", "Seconds a key waits in the queue before it is handed out."),
		workDuration: hist("work_duration_seconds", "Seconds processing one key takes."),
	}
}

func (m *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}
func (m *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}
func (m *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}
func (m *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}
func (m *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}
func (m *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longest.WithLabelValues(name)
}
func (m *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}

// OnEvery is an informer event handler that calls f with every object added, updated (the
// new one) or deleted (its last known state: a tombstone is unwrapped), for controllers
// that react to any change the same way.
func OnEvery(f func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    f,
		UpdateFunc: func(_, n any) { f(n) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			f(obj)
		},
	}
}

// EnqueueAll is an informer event handler that adds the namespace/name key of every object
// added, updated or deleted to q.
func EnqueueAll(q Queue) cache.ResourceEventHandlerFuncs {
	return OnEvery(func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	})
}
