package admitwasm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// benchConfig is the four example policies (built from wasm-examples/go), every one
// matching every pod create, as examples/wasmkube.yaml declares them.
const benchConfig = `
admission:
  policies:
  - name: default-resources
    path: @default-resources@
    args: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: 500m, memory: 256Mi}}
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE, UPDATE]}]
    pool: %[1]d
  - name: no-privileged
    path: @no-privileged@
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE, UPDATE]}]
    pool: %[1]d
  - name: disallow-latest-tag
    path: @disallow-latest-tag@
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE, UPDATE]}]
    validationActions: [Warn]
    pool: %[1]d
  - name: require-labels
    path: @require-labels@
    args: {labels: [team]}
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE, UPDATE]}]
    pool: %[1]d
`

// benchPool is each policy's pool in the pod-create benchmark, the default (2 gives the
// same CPU per create on the 2-core machine).
const benchPool = admitwasm.DefaultPoolSize

var examplePolicies = []string{"default-resources", "no-privileged", "disallow-latest-tag", "require-labels"}

// BenchmarkPodCreatePolicies creates pods through client-go from 16 concurrent clients
// (WASMKUBE_BENCH_CLIENTS to change)
// against the real API server, without wasm policies and with the four example policies
// matching every pod, and reports creates/s, the p99 of a create, and each policy's p99
// call time (from wasmkube_admission_policy_duration_seconds, interpolated in its
// bucket as histogram_quantile does). Compare creates/s of the two runs:
//
//	go test ./plugins/admitwasm -run '^$' -bench PodCreatePolicies -benchtime 10000x
func BenchmarkPodCreatePolicies(b *testing.B) {
	clients := 16
	if n, err := strconv.Atoi(os.Getenv("WASMKUBE_BENCH_CLIENTS")); err == nil && n > 0 {
		clients = n
	}
	for _, withPolicies := range []bool{false, true} {
		name := "policies=none"
		if withPolicies {
			name = "policies=4"
		}
		b.Run(name, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			var plugins []admission.Plugin
			var pol *admitwasm.Policies
			if withPolicies {
				cfg := fmt.Sprintf(benchConfig, benchPool)
				for _, p := range examplePolicies {
					cfg = strings.ReplaceAll(cfg, "@"+p+"@", wasmbuild.Go(b, "wasm-examples/go/"+p))
				}
				dir := b.TempDir()
				file := filepath.Join(dir, "wasmkube.yaml")
				if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
					b.Fatal(err)
				}
				quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
				h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(dir, "cache"), Registerer: reg, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				pol, err = admitwasm.New(context.Background(), admitwasm.Options{Host: h, ConfigFile: file, Registerer: reg, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { pol.Close(context.Background()) })
				plugins = append(plugins, pol)
			}
			srv := apiservertest.Start(b, apiservertest.WithAdmission(plugins...))
			var created0, discarded0 int64
			timed := func() {
				if pol != nil {
					created0, discarded0 = admitwasm.InstancesCreated(pol)
				}
			}
			creates, p99, cpu := createPods(b, srv, clients, timed)
			b.ReportMetric(creates, "creates/s")
			b.ReportMetric(p99, "p99-ms")
			b.ReportMetric(cpu, "cpu-us/create")
			if withPolicies {
				for _, p := range examplePolicies {
					b.ReportMetric(histogramQuantile(b, reg, 0.99, p)*1e6, "p99-us/"+p)
				}
				// Instances made and discarded while timed: the warm-up makes every
				// instance, so both are 0 unless a call failed or overran its limit.
				created, discarded := admitwasm.InstancesCreated(pol)
				b.ReportMetric(float64(created-created0), "new-instances")
				b.ReportMetric(float64(discarded-discarded0), "discarded-instances")
			}
		})
	}
}

// createPods creates b.N pods from clients clients and returns creates/s, the p99
// latency of one create in milliseconds, and the process's CPU time per create in
// microseconds (clients, API server and etcd are all in this process; unlike creates/s,
// it does not depend on what else the machine runs).
func createPods(b *testing.B, srv *apiservertest.Server, clients int, timed func()) (float64, float64, float64) {
	ctx := context.Background()
	cs := make([]kubernetes.Interface, clients)
	for i := range cs {
		c, err := kubernetes.NewForConfig(srv.Config)
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = c
	}
	// Warm the connections and every instance of the policies' pools: all clients at
	// once, so that the timed part measures the steady state, not instantiation.
	var warm sync.WaitGroup
	warmErr := make(chan error, clients)
	for i, c := range cs {
		warm.Add(1)
		go func() {
			defer warm.Done()
			for j := range 4 {
				if _, err := c.CoreV1().Pods("default").Create(ctx, benchPod(fmt.Sprintf("warm-%d-%d", i, j)), metav1.CreateOptions{}); err != nil {
					warmErr <- err
					return
				}
			}
		}()
	}
	warm.Wait()
	close(warmErr)
	if err := <-warmErr; err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	var failed atomic.Value
	timed()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	start := time.Now()
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pods := cs[w].CoreV1().Pods("default")
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				t0 := time.Now()
				if _, err := pods.Create(ctx, benchPod(fmt.Sprintf("p-%d", i)), metav1.CreateOptions{}); err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime(b) - cpu0
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return float64(b.N) / elapsed.Seconds(), float64(all[int(0.99*float64(len(all)-1))].Microseconds()) / 1000,
		float64(cpu.Microseconds()) / float64(b.N)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPod passes every example policy: labelled team, a tagged image, not privileged,
// no resources (default-resources adds them).
func benchPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "bench", "app": "bench"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1.36"}}}}
}

// admittedPod is a pod as the API server's chain admits it (benchPod after defaulting and
// the service account admission: a token volume, tolerations, 1.5 KB of JSON), before
// default-resources has given it requests.
func admittedPod(b *testing.B) *v1.Pod {
	data, err := os.ReadFile("testdata/defaulted-pod.json")
	if err != nil {
		b.Fatal(err)
	}
	var p v1.Pod
	if err := json.Unmarshal(data, &p); err != nil {
		b.Fatal(err)
	}
	return &p
}

// histogramQuantile is Prometheus' histogram_quantile over one policy's calls (every
// operation, allowed or not), in seconds.
func histogramQuantile(b *testing.B, reg *prometheus.Registry, q float64, policy string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	counts := map[float64]uint64{}
	var total uint64
	for _, mf := range mfs {
		if mf.GetName() != "wasmkube_admission_policy_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "policy") != policy {
				continue
			}
			h := m.GetHistogram()
			total += h.GetSampleCount()
			for _, bk := range h.GetBucket() {
				counts[bk.GetUpperBound()] += bk.GetCumulativeCount()
			}
		}
	}
	if total == 0 {
		return math.NaN()
	}
	var bounds []float64
	for ub := range counts {
		bounds = append(bounds, ub)
	}
	sort.Float64s(bounds)
	rank := q * float64(total)
	lower, below := 0.0, uint64(0)
	for _, ub := range bounds {
		if c := counts[ub]; float64(c) >= rank {
			return lower + (ub-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = ub, counts[ub]
	}
	return math.Inf(1)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// BenchmarkPolicyCall runs each example policy on one pod create, in process (no API
// server): the cost of the policy alone, host and guest.
//
//	go test ./plugins/admitwasm -run '^$' -bench PolicyCall
func BenchmarkPolicyCall(b *testing.B) {
	args := map[string]string{"require-labels": `{"labels":["team"]}`, "default-resources": `{"requests":{"cpu":"100m","memory":"128Mi"}}`}
	for _, name := range examplePolicies {
		b.Run(name, func(b *testing.B) {
			p := admitwasmtest.Load(b, name, wasmbuild.Go(b, "wasm-examples/go/"+name), args[name])
			pod := admittedPod(b)
			a := admitwasmtest.CreatePod(pod)
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for range b.N {
				if r := p.Run(b, a); !r.Allowed {
					b.Fatal(r.Message)
				}
			}
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
			// The linear memory of an idle instance after the calls (the guest's heap).
			var mem uint64
			for _, m := range p.Pool.IdleMemory() {
				mem = max(mem, m)
			}
			b.ReportMetric(float64(mem>>10), "KiB/instance")
		})
	}
}

// BenchmarkAdmission runs one pod create through the wasm policies as the API server's
// chain does (every mutating policy, then every validating one), in process: what the four
// example policies add to a create, and the same with WAT policies of the same shape
// (two validations reading labels, one mutation setting a patch): the host's own cost.
//
//	go test ./plugins/admitwasm -run '^$' -bench Admission -benchmem
func BenchmarkAdmission(b *testing.B) {
	examples := fmt.Sprintf(benchConfig, 1)
	for _, p := range examplePolicies {
		examples = strings.ReplaceAll(examples, "@"+p+"@", wasmbuild.Go(b, "wasm-examples/go/"+p))
	}
	wat := `
admission:
  policies:
  - name: add-annotation
    path: ` + wasmbuild.WAT(b, "plugins/admitwasm/testdata/add-annotation.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    pool: 1
  - name: require-team
    path: ` + wasmbuild.WAT(b, "plugins/admitwasm/testdata/require-team.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    pool: 1
  - name: require-team-2
    path: ` + wasmbuild.WAT(b, "plugins/admitwasm/testdata/require-team.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    pool: 1
`
	for _, tc := range []struct{ name, config string }{{"examples", examples}, {"wat", wat}} {
		b.Run(tc.name, func(b *testing.B) {
			quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
			h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(os.TempDir(), "wasmkube-bench-cache"), Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			pol, err := admitwasm.New(context.Background(), admitwasm.Options{Host: h, Config: []byte(tc.config), Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer pol.Close(context.Background())
			chain, err := admission.NewChain(pol)
			if err != nil {
				b.Fatal(err)
			}
			proto := admittedPod(b)
			proto.UID = "u"
			ctx := context.Background()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for range b.N {
				a := admitwasmtest.CreatePod(proto.DeepCopy())
				if err := chain.Admit(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time, unlike ns/op, hardly depends on what else the machine runs.
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}
