package wasmpolicy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

const preferTwo = `apiVersion: policy.wasmkube.io/v1alpha1
kind: WasmPolicy
metadata: {name: prefer-two}
spec:
  hook: scheduler.score
  mode: %s
  module: {file: %s}
  scheduler: {schedulerName: default-scheduler, weight: 100}
`

// TestSchedulerScoreWasmPolicy: a Score WasmPolicy on three hollow nodes. In Monitor it is
// computed on every cycle and counts the pods it would have placed elsewhere, without
// moving one; in Enforce every pod goes where it says.
func TestSchedulerScoreWasmPolicy(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithListen("127.0.0.1:27103"))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- hollow.Run(ctx, srv.Config, hollow.Options{Count: 3, Prefix: "hollow-", Ready: ready, Logger: quiet()})
	}()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("hollow nodes: %v", err)
	}
	s := runScheduler(t, ctx, cancel, srv)

	reg := prometheus.NewRegistry()
	m := wasmpolicy.NewMetrics(reg)
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	rec := &sink{}
	startLoader(t, wasmpolicy.Config{Component: wasmpolicy.ComponentScheduler, Name: "scheduler-a", Dynamic: dyn, Client: srv.Client,
		Target: &schedwasm.APITier{Scheduler: s, Metrics: m}, SchedulerNames: s.Profiles, Sink: rec, Resync: 50 * time.Millisecond})

	module := wasmbuild.WAT(t, "plugins/wasmpolicy/testdata/prefer-two.wat")
	n := 0
	// place creates count pods and returns the node of each once bound.
	place := func(count int) []string {
		t.Helper()
		var names []string
		for range count {
			n++
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", n)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
			if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			names = append(names, pod.Name)
		}
		var nodes []string
		deadline := time.Now().Add(60 * time.Second)
		for _, name := range names {
			for {
				p, err := srv.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if p.Spec.NodeName != "" {
					nodes = append(nodes, p.Spec.NodeName)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("pod %s not bound", name)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		return nodes
	}

	gen := apply(t, dyn, fmt.Sprintf(preferTwo, "Monitor", module))
	if st := rec.await(t, "prefer-two", gen, policyv1alpha1.PhaseActive); st.Component != wasmpolicy.ComponentScheduler {
		t.Fatalf("status %+v", st)
	}
	elsewhere := 0
	for _, node := range place(6) {
		if node != "hollow-2" {
			elsewhere++
		}
	}
	comparisons := testutil.ToFloat64(m.MonitorComparisons.WithLabelValues("prefer-two", wasmpolicy.ComponentScheduler))
	disagreements := testutil.ToFloat64(m.MonitorDisagreements.WithLabelValues("prefer-two", wasmpolicy.ComponentScheduler))
	if comparisons != 6 || disagreements != float64(elsewhere) {
		t.Fatalf("Monitor: %v comparisons (want 6), %v disagreements (want %d, the pods placed off hollow-2)", comparisons, disagreements, elsewhere)
	}

	gen = apply(t, dyn, fmt.Sprintf(preferTwo, "Enforce", module))
	rec.await(t, "prefer-two", gen, policyv1alpha1.PhaseActive)
	for i, node := range place(4) {
		if node != "hollow-2" {
			t.Fatalf("Enforce: pod %d placed on %s, want hollow-2", i, node)
		}
	}

	// A policy naming a profile the scheduler does not run loads once a config reload adds
	// that profile (the loader's resync sees the new profiles).
	gen = apply(t, dyn, strings.Replace(strings.Replace(fmt.Sprintf(preferTwo, "Enforce", module), "prefer-two}", "prefer-two-second}", 1),
		"schedulerName: default-scheduler", "schedulerName: second", 1))
	if err := s.Reload([]byte("scheduler:\n  profiles:\n  - schedulerName: default-scheduler\n  - schedulerName: second\n")); err != nil {
		t.Fatal(err)
	}
	rec.await(t, "prefer-two-second", gen, policyv1alpha1.PhaseActive)

	// A policy named as a wasm plugin of the config file is refused: the file tier wins.
	if err := s.Reload([]byte(fmt.Sprintf("scheduler:\n  wasmPlugins:\n  - name: file-tier\n    path: %s\n  profiles:\n  - schedulerName: default-scheduler\n  - schedulerName: second\n", module))); err != nil {
		t.Fatal(err)
	}
	gen = apply(t, dyn, strings.Replace(fmt.Sprintf(preferTwo, "Enforce", module), "prefer-two}", "file-tier}", 1))
	if st := rec.await(t, "file-tier", gen, policyv1alpha1.PhaseFailed); st.Reason != wasmpolicy.ReasonConflict {
		t.Fatalf("a WasmPolicy named as the config file's wasm plugin: %+v, want Failed %s", st, wasmpolicy.ReasonConflict)
	}
}

// runScheduler runs a scheduler with a wasm host on srv until the test ends (cancel, then
// wait for it).
func runScheduler(t *testing.T, ctx context.Context, cancel context.CancelFunc, srv *apiservertest.Server) *scheduler.Scheduler {
	t.Helper()
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(ctx, scheduler.Options{RESTConfig: srv.SchedulerConfig(t), WasmLoader: schedwasm.NewLoader(host).Load, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}
