package controller_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/core/controller"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

// benchInt reads a size from the environment so the figures can be reproduced
// (WASMKUBE_BENCH_NODES=100 WASMKUBE_BENCH_COMPLETIONS=1000 ...) while the defaults stay small.
func benchInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchEnv is the in-process cluster of the benchmarks, with nodes hollow nodes that
// update pod statuses with WASMKUBE_BENCH_HOLLOW_WORKERS (default 64) workers. The hollow
// nodes' default of 8 workers for all nodes together was what bounded a 100-node Job: each
// completion is two status writes (Running, Succeeded), so at about a second per write on a
// loaded API server 8 workers finish 4 pods a second, while 100 real kubelets would each
// write their own pods' statuses in parallel.
func benchEnv(b *testing.B, nodes int) *env {
	b.Helper()
	e := newEnv(b, envOpts{ctrl: &controller.Options{Workers: 5}})
	ready := make(chan struct{})
	errc := make(chan error, 1)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		errc <- hollow.Run(e.ctx, e.srv.Config, hollow.Options{Count: nodes, Prefix: "hollow-", Ready: ready,
			Workers: benchInt("WASMKUBE_BENCH_HOLLOW_WORKERS", 64), Logger: testLogger()})
	}()
	select {
	case <-ready:
	case err := <-errc:
		b.Fatalf("hollow nodes: %v", err)
	}
	return e
}

// BenchmarkJob times a Job of WASMKUBE_BENCH_COMPLETIONS (default 200) completions,
// parallelism WASMKUBE_BENCH_PARALLELISM (default 50), on WASMKUBE_BENCH_NODES (default 20)
// hollow nodes, from create to the Complete condition.
func BenchmarkJob(b *testing.B) {
	nodes, completions, parallelism := benchInt("WASMKUBE_BENCH_NODES", 20), benchInt("WASMKUBE_BENCH_COMPLETIONS", 200), benchInt("WASMKUBE_BENCH_PARALLELISM", 50)
	e := benchEnv(b, nodes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("bench-%d", i)
		start := time.Now()
		if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, newJob(name, int32(completions), int32(parallelism)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		e.waitJob(name, batchv1.JobComplete)
		b.ReportMetric(time.Since(start).Seconds(), "s/job")
	}
	b.ReportMetric(float64(completions), "completions")
}

// BenchmarkDaemonSetRollout times a DaemonSet's rolling update (maxUnavailable 10%) over
// WASMKUBE_BENCH_NODES (default 50) hollow nodes, until kubectl rollout status would call it done.
func BenchmarkDaemonSetRollout(b *testing.B) {
	nodes := benchInt("WASMKUBE_BENCH_NODES", 50)
	e := benchEnv(b, nodes)
	labels := map[string]string{"app": "bench"}
	mu := intstr.FromString("10%")
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &mu}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "busybox:0"}}}},
		},
	}
	if _, err := e.client.AppsV1().DaemonSets("default").Create(e.ctx, ds, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	done := func(image string) func() (bool, error) {
		return func() (bool, error) {
			cur, err := e.client.AppsV1().DaemonSets("default").Get(e.ctx, "bench", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := cur.Status
			return cur.Spec.Template.Spec.Containers[0].Image == image && st.ObservedGeneration >= cur.Generation &&
				st.DesiredNumberScheduled == int32(nodes) && st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
				st.NumberAvailable == st.DesiredNumberScheduled, fmt.Errorf("status %+v", st)
		}
	}
	e.eventually("daemonset on every node", done("busybox:0"))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		image := fmt.Sprintf("busybox:%d", i+1)
		start := time.Now()
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"agent","image":%q}]}}}}`, image)
		if _, err := e.client.AppsV1().DaemonSets("default").Patch(e.ctx, "bench", "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		e.eventually("rollout of "+image, done(image))
		b.ReportMetric(time.Since(start).Seconds(), "s/rollout")
	}
	b.ReportMetric(float64(nodes), "nodes")
}
