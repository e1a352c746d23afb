package wasmpolicy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// registry is go-containerregistry's registry on loopback, counting its requests.
type registry struct {
	addr     string
	requests atomic.Int64

	mu sync.Mutex
	// reads counts the HEAD and GET requests of each path (/v2/REPO/manifests/TAG).
	reads map[string]int
}

// manifestReads is how often the manifest repo:ref was asked for (HEAD or GET).
func (r *registry) manifestReads(repo, ref string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads["/v2/"+repo+"/manifests/"+ref]
}

func startRegistry(t *testing.T, addr string) *registry {
	t.Helper()
	h, err := wasmoci.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &registry{addr: ln.Addr().String(), reads: map[string]int{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if req.Method == http.MethodHead || req.Method == http.MethodGet {
			r.mu.Lock()
			r.reads[req.URL.Path]++
			r.mu.Unlock()
		}
		h.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// push builds the WAT file and pushes it to the registry as repo:tag.
func (r *registry) push(t *testing.T, wat, repoTag string) string {
	t.Helper()
	b, err := os.ReadFile(wasmbuild.WAT(t, wat))
	if err != nil {
		t.Fatal(err)
	}
	d, err := wasmoci.Push(context.Background(), b, r.addr+"/"+repoTag, wasmoci.PushOptions{Created: time.Unix(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return d.DigestStr()
}

// sink records every observation and the last one per policy.
type sink struct {
	mu   sync.Mutex
	all  []policyv1alpha1.ComponentStatus
	last map[string]policyv1alpha1.ComponentStatus
}

func (s *sink) Observe(policy string, st policyv1alpha1.ComponentStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string]policyv1alpha1.ComponentStatus{}
	}
	s.all = append(s.all, st)
	s.last[policy] = st
}

// await waits until the policy's last status is phase for generation gen.
func (s *sink) await(t *testing.T, policy string, gen int64, phase policyv1alpha1.Phase) policyv1alpha1.ComponentStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s.mu.Lock()
		st, ok := s.last[policy]
		s.mu.Unlock()
		if ok && st.ObservedGeneration == gen && st.Phase == phase {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy %s: no %s for generation %d; last status %+v", policy, phase, gen, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var wasmPolicies = policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicies")

// apply creates or updates a WasmPolicy from YAML and returns its generation.
func apply(t *testing.T, dyn dynamic.Interface, manifest string) int64 {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(js, &u.Object); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := dyn.Resource(wasmPolicies)
	cur, err := c.Get(ctx, u.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		out, err := c.Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out.GetGeneration()
	case err != nil:
		t.Fatal(err)
	}
	u.SetResourceVersion(cur.GetResourceVersion())
	out, err := c.Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out.GetGeneration()
}

// admission is an API server whose wasm admission policies are an API tier alone.
type admission struct {
	srv *apiservertest.Server
	pol *admitwasm.Policies
	reg *prometheus.Registry
}

func newPolicies(t *testing.T, reg prometheus.Registerer) *admitwasm.Policies {
	t.Helper()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(t.TempDir(), "compiled"), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := admitwasm.New(context.Background(), admitwasm.Options{Host: h, Registerer: reg, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pol.Close(context.Background()) })
	return pol
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// startLoader runs a Loader for target until the test ends.
func startLoader(t *testing.T, cfg wasmpolicy.Config) *wasmpolicy.Loader {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	l, err := wasmpolicy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

const requireTeam = `apiVersion: policy.wasmkube.io/v1alpha1
kind: WasmPolicy
metadata: {name: require-team}
spec:
  hook: admission.validate
  mode: %s
  module: {image: %s}
  failurePolicy: Fail
  admission:
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    namespaceSelector: {matchLabels: {wasmkube.io/require-team: "true"}}
`

// TestAdmissionWasmPolicy is issue 27's walk through the API tier of admission: a module
// pushed to the wasmkube registry, a WasmPolicy in Monitor (requests counted, none
// refused), switched to Enforce (refused), a broken module under a new tag (Failed, the
// last good revision still refusing), back to the good tag, and a restarted component
// with a warm cache that asks the registry for nothing.
func TestAdmissionWasmPolicy(t *testing.T) {
	reg := startRegistry(t, "127.0.0.1:27101")
	goodDigest := reg.push(t, "plugins/admitwasm/testdata/require-team.wat", "policies/require-team:v1")
	brokenDigest := reg.push(t, "plugins/admitwasm/testdata/broken.wat", "policies/require-team:v2")

	metrics := prometheus.NewRegistry()
	pol := newPolicies(t, metrics)
	srv := apiservertest.Start(t, apiservertest.WithAdmission(pol), apiservertest.WithListen("127.0.0.1:27102"))
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	startController(t, srv) // resolves the tags
	cacheDir := t.TempDir()
	rec := &sink{}
	startLoader(t, wasmpolicy.Config{Component: wasmpolicy.ComponentAPIServer, Name: "apiserver-a", Dynamic: dyn, Client: srv.Client,
		Target: pol, Cache: wasmoci.Options{Dir: cacheDir}, Sink: rec})

	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "teams", Labels: map[string]string{"wasmkube.io/require-team": "true"}}}
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	createPod := func() error {
		n++
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", n)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		_, err := srv.Client.CoreV1().Pods("teams").Create(ctx, pod, metav1.CreateOptions{})
		return err
	}
	image := reg.addr + "/policies/require-team:v1"

	// Monitor: the policy runs and its denials are counted; nothing is refused.
	gen := apply(t, dyn, fmt.Sprintf(requireTeam, "Monitor", image))
	st := rec.await(t, "require-team", gen, policyv1alpha1.PhaseActive)
	if st.Digest != goodDigest || st.Component != wasmpolicy.ComponentAPIServer || st.Name != "apiserver-a" || st.Mode != policyv1alpha1.ModeMonitor {
		t.Fatalf("Active status: %+v (want digest %s)", st, goodDigest)
	}
	for range 3 {
		if err := createPod(); err != nil {
			t.Fatalf("a Monitor policy refused a request: %v", err)
		}
	}
	if got := testutil.ToFloat64(wasmpolicy.NewMetrics(metrics).MonitorDecisions.WithLabelValues("require-team", wasmpolicy.VerdictDeny)); got != 3 {
		t.Fatalf("monitor deny decisions = %v, want 3", got)
	}
	if got := testutil.ToFloat64(wasmpolicy.NewMetrics(metrics).InForceGauge().WithLabelValues(wasmpolicy.ComponentAPIServer, "require-team", wasmpolicy.TierAPI, "Monitor")); got != 1 {
		t.Fatalf("wasmkube_policy_in_force{tier=api,mode=Monitor} = %v", got)
	}

	// Enforce: the same module now refuses.
	gen = apply(t, dyn, fmt.Sprintf(requireTeam, "Enforce", image))
	rec.await(t, "require-team", gen, policyv1alpha1.PhaseActive)
	if err := createPod(); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "admission policy require-team denied the request") {
		t.Fatalf("Enforce: got %v, want a denial by require-team", err)
	}

	// A broken module under a new tag: Failed with the reason, the last good one in force.
	gen = apply(t, dyn, fmt.Sprintf(requireTeam, "Enforce", reg.addr+"/policies/require-team:v2"))
	st = rec.await(t, "require-team", gen, policyv1alpha1.PhaseFailed)
	// Mode: the revision in force (the last good one) is in Enforce.
	if st.Reason != wasmpolicy.ReasonLoadFailed || st.Digest != brokenDigest || !strings.Contains(st.Message, "smoke call") || st.Mode != policyv1alpha1.ModeEnforce {
		t.Fatalf("Failed status: %+v", st)
	}
	if err := createPod(); !apierrors.IsForbidden(err) {
		t.Fatalf("after a failed swap the last good revision must still refuse: %v", err)
	}

	// Back to the good tag, then a restarted component with the same cache: no request.
	gen = apply(t, dyn, fmt.Sprintf(requireTeam, "Enforce", image))
	rec.await(t, "require-team", gen, policyv1alpha1.PhaseActive)
	before := reg.requests.Load()
	again := &sink{}
	startLoader(t, wasmpolicy.Config{Component: wasmpolicy.ComponentAPIServer, Name: "apiserver-a", Dynamic: dyn, Client: srv.Client,
		Target: newPolicies(t, prometheus.NewRegistry()), Cache: wasmoci.Options{Dir: cacheDir}, Sink: again})
	if st := again.await(t, "require-team", gen, policyv1alpha1.PhaseActive); st.Digest != goodDigest {
		t.Fatalf("restarted: %+v", st)
	}
	if got := reg.requests.Load() - before; got != 0 {
		t.Fatalf("a restart with a warm cache asked the registry %d times", got)
	}

	// Enforce -> Monitor: allowed, and requests are accepted again (counted).
	gen = apply(t, dyn, fmt.Sprintf(requireTeam, "Monitor", image))
	if st := rec.await(t, "require-team", gen, policyv1alpha1.PhaseActive); st.Mode != policyv1alpha1.ModeMonitor {
		t.Fatalf("back to Monitor: %+v", st)
	}
	if err := createPod(); err != nil {
		t.Fatalf("Monitor again refused: %v", err)
	}
	if got := testutil.ToFloat64(wasmpolicy.NewMetrics(metrics).MonitorDecisions.WithLabelValues("require-team", wasmpolicy.VerdictDeny)); got != 4 {
		t.Fatalf("monitor deny decisions = %v, want 4", got)
	}
}
