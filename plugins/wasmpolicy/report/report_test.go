package report_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

var _ wasmpolicy.StatusSink = (*report.Sink)(nil)

// writes counts the requests that write WasmPolicyReports.
type writes struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (w writes) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/wasmpolicyreports") {
		w.n.Add(1)
	}
	return w.rt.RoundTrip(r)
}

func countingClient(t *testing.T, cfg *rest.Config) (dynamic.Interface, *atomic.Int64) {
	n := &atomic.Int64{}
	c := rest.CopyConfig(cfg)
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return writes{rt: rt, n: n} }
	d, err := dynamic.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return d, n
}

func createPolicy(t *testing.T, d dynamic.Interface, name string) *unstructured.Unstructured {
	p := &policyv1alpha1.WasmPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookKubeletProbe, Module: policyv1alpha1.ModuleSource{File: "/m.wasm"},
			Kubelet: &policyv1alpha1.KubeletHook{HookName: "h"}},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Resource(report.PoliciesResource).Create(context.Background(), &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitReport waits until the report of node n1 on policy says phase at gen.
func waitReport(t *testing.T, d dynamic.Interface, policy string, phase policyv1alpha1.Phase, gen int64) *policyv1alpha1.WasmPolicyReport {
	var r policyv1alpha1.WasmPolicyReport
	name := report.Name(policy, policyv1alpha1.ComponentKubelet, "n1")
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := d.Resource(report.ReportsResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			return false, err
		}
		return r.Status.Phase == phase && r.Status.ObservedGeneration == gen, nil
	})
	if err != nil {
		t.Fatalf("report %s never said %s at generation %d (last: %+v): %v", name, phase, gen, r.Status, err)
	}
	return &r
}

func run(t *testing.T, d dynamic.Interface, settle time.Duration) *report.Sink {
	s, err := report.New(report.Options{Client: d, Component: policyv1alpha1.ComponentKubelet, Instance: "n1", Settle: settle})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// TestSinkCoalesces: a swap's phases (Pending, Fetching, Active) cost one write; the same
// status again, or a restarted sink that finds its report saying it, costs none; a
// change (a new generation that fails) costs one more; the report is owned by its policy.
func TestSinkCoalesces(t *testing.T) {
	srv := apiservertest.Start(t)
	d, n := countingClient(t, srv.Config)
	pol := createPolicy(t, d, "p")
	createPolicy(t, d, "other")
	s := run(t, d, time.Hour)
	st := func(phase policyv1alpha1.Phase, gen int64) policyv1alpha1.ComponentStatus {
		return policyv1alpha1.ComponentStatus{Phase: phase, ObservedGeneration: gen, Digest: "sha256:" + strings.Repeat("a", 64)}
	}
	s.Observe("p", st(policyv1alpha1.PhasePending, 1))
	s.Observe("p", st(policyv1alpha1.PhaseFetching, 1))
	s.Observe("p", st(policyv1alpha1.PhaseActive, 1))
	r := waitReport(t, d, "p", policyv1alpha1.PhaseActive, 1)
	if got := n.Load(); got != 1 {
		t.Fatalf("%d writes for one swap, want 1", got)
	}
	if r.Status.Component != policyv1alpha1.ComponentKubelet || r.Status.Name != "n1" || r.Policy != "p" || r.Status.LastTransitionTime.IsZero() {
		t.Fatalf("report %+v", r)
	}
	if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != pol.GetUID() {
		t.Fatalf("owner references %+v, want the policy's uid %s", r.OwnerReferences, pol.GetUID())
	}
	// The same status again, then another policy's: the flush that writes the second
	// has seen the first, which says nothing new.
	s.Observe("p", st(policyv1alpha1.PhaseActive, 1))
	s.Observe("other", st(policyv1alpha1.PhaseActive, 1))
	waitReport(t, d, "other", policyv1alpha1.PhaseActive, 1)
	if got := n.Load(); got != 2 {
		t.Fatalf("%d writes, want 2 (p's unchanged status is not written again)", got)
	}

	// A restarted component: its sink finds the report saying the same and writes nothing.
	d2, n2 := countingClient(t, srv.Config)
	s2 := run(t, d2, time.Hour)
	s2.Observe("p", st(policyv1alpha1.PhaseActive, 1))
	s2.Observe("p", st(policyv1alpha1.PhaseFetching, 2)) // a transient phase within the settle time: not written
	s2.Observe("p", st(policyv1alpha1.PhaseFailed, 2))
	r = waitReport(t, d2, "p", policyv1alpha1.PhaseFailed, 2)
	if got := n2.Load(); got != 1 {
		t.Fatalf("%d writes after a restart and one change, want 1", got)
	}
}

// TestSinkWritesALingeringFetch: a transient phase that lasts longer than the settle time
// is written, so a slow fetch shows.
func TestSinkWritesALingeringFetch(t *testing.T) {
	srv := apiservertest.Start(t)
	d, _ := countingClient(t, srv.Config)
	createPolicy(t, d, "p")
	s := run(t, d, 50*time.Millisecond)
	s.Observe("p", policyv1alpha1.ComponentStatus{Phase: policyv1alpha1.PhaseFetching, ObservedGeneration: 1})
	waitReport(t, d, "p", policyv1alpha1.PhaseFetching, 1)
}

func TestName(t *testing.T) {
	if got := report.Name("p", "kubelet", "n1"); got != "p.kubelet.n1" {
		t.Fatalf("Name = %s", got)
	}
	a, b := report.Name("p", "apiserver", "host_1"), report.Name("p", "apiserver", "host-1")
	if a == b || !strings.HasPrefix(a, "p.apiserver.host-1-") {
		t.Fatalf("a changed instance name must get a hash: %s, %s", a, b)
	}
	if long := report.Name(strings.Repeat("p", 250), "kubelet", "n1"); len(long) > 253 {
		t.Fatalf("%d characters", len(long))
	}
}
