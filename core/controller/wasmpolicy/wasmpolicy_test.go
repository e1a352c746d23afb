package wasmpolicy_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/controller/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

type env struct {
	t   *testing.T
	srv *apiservertest.Server
	dyn dynamic.Interface
	ctx context.Context
}

func start(t *testing.T) *env {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := srv.ControllerManagerConfig(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	f := informers.NewSharedInformerFactory(client, 0)
	df := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	c, err := wasmpolicy.New(client, dyn, f, df, b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: wasmpolicy.Name}), nil, wasmpolicy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	df.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 2) }()
	t.Cleanup(func() { cancel(); <-done; b.Shutdown() })
	return &env{t: t, srv: srv, dyn: dynamic.NewForConfigOrDie(srv.Config), ctx: ctx}
}

func (e *env) node(name string, ready bool, lbls map[string]string) {
	e.t.Helper()
	c := e.srv.Client.CoreV1().Nodes()
	n, err := c.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		if n, err = c.Create(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, LastHeartbeatTime: metav1.Now()}}
	if _, err := c.UpdateStatus(e.ctx, n, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) create(name string, spec policyv1alpha1.WasmPolicySpec) {
	e.t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&policyv1alpha1.WasmPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.dyn.Resource(report.PoliciesResource).Create(e.ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) get(name string) *policyv1alpha1.WasmPolicy {
	e.t.Helper()
	u, err := e.dyn.Resource(report.PoliciesResource).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	p := &policyv1alpha1.WasmPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// update changes the policy's spec (retrying conflicts with the controller's writes).
func (e *env) update(name string, fn func(*policyv1alpha1.WasmPolicySpec)) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p := e.get(name)
		fn(&p.Spec)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			return false, err
		}
		_, err = e.dyn.Resource(report.PoliciesResource).Update(ctx, &unstructured.Unstructured{Object: m}, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// until waits for the policy's status to satisfy ok; it fails with the last status.
func (e *env) until(name, what string, ok func(*policyv1alpha1.WasmPolicy) bool) *policyv1alpha1.WasmPolicy {
	e.t.Helper()
	var p *policyv1alpha1.WasmPolicy
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		p = e.get(name)
		return ok(p), nil
	})
	if err != nil {
		c := meta.FindStatusCondition(p.Status.Conditions, wasmpolicy.ConditionReady)
		e.t.Fatalf("%s: %s never held; generation %d, status: observedGeneration %d, %d/%d, revision %d, Ready %+v", name, what,
			p.Generation, p.Status.ObservedGeneration, p.Status.ReadyComponents, p.Status.TargetedComponents, p.Status.Revision, c)
	}
	return p
}

func readyIs(n, m int32, status metav1.ConditionStatus) func(*policyv1alpha1.WasmPolicy) bool {
	return func(p *policyv1alpha1.WasmPolicy) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, wasmpolicy.ConditionReady)
		return p.Status.ObservedGeneration == p.Generation && p.Status.ReadyComponents == n && p.Status.TargetedComponents == m &&
			c != nil && c.Status == status && strings.HasPrefix(c.Message, fmt.Sprintf("%d/%d", n, m))
	}
}

func sink(t *testing.T, cfg *rest.Config, component, instance string) *report.Sink {
	s, err := report.New(report.Options{Client: dynamic.NewForConfigOrDie(cfg), Component: component, Instance: instance, Settle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// TestRollupFromKubelets: a probe policy limited by nodeSelector targets the Ready nodes it
// matches; their reports (written with the kubelets' own credentials) roll up into
// READY n/m, Degraded and an Event for the failure; a node that goes NotReady drops out
// of the count.
func TestRollupFromKubelets(t *testing.T) {
	e := start(t)
	ssd := map[string]string{"disk": "ssd"}
	e.node("n1", true, ssd)
	e.node("n2", true, ssd)
	e.node("n3", true, nil)
	e.create("probe", policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookKubeletProbe, Module: policyv1alpha1.ModuleSource{File: "/m.wasm"},
		Kubelet: &policyv1alpha1.KubeletHook{HookName: "h", NodeSelector: &metav1.LabelSelector{MatchLabels: ssd}}})
	p := e.until("probe", "0/2 pending", readyIs(0, 2, metav1.ConditionFalse))
	if len(p.Status.Components) != 2 || p.Status.Components[0].Name != "n1" || p.Status.Components[0].Reason != wasmpolicy.ReasonNoReport {
		t.Fatalf("components %+v", p.Status.Components)
	}

	s1 := sink(t, e.srv.NodeConfig(t, "n1"), policyv1alpha1.ComponentKubelet, "n1")
	s2 := sink(t, e.srv.NodeConfig(t, "n2"), policyv1alpha1.ComponentKubelet, "n2")
	s1.Observe("probe", policyv1alpha1.ComponentStatus{ObservedGeneration: 1, Phase: policyv1alpha1.PhaseActive})
	s2.Observe("probe", policyv1alpha1.ComponentStatus{ObservedGeneration: 1, Phase: policyv1alpha1.PhaseFailed, Reason: "LoadFailed", Message: "exports no wasmkube_probe"})
	p = e.until("probe", "1/2 and Degraded", func(p *policyv1alpha1.WasmPolicy) bool {
		d := meta.FindStatusCondition(p.Status.Conditions, wasmpolicy.ConditionDegraded)
		return readyIs(1, 2, metav1.ConditionFalse)(p) && d != nil && d.Status == metav1.ConditionTrue
	})
	if d := meta.FindStatusCondition(p.Status.Conditions, wasmpolicy.ConditionDegraded); !strings.Contains(d.Message, "kubelet n2: LoadFailed: exports no wasmkube_probe") {
		t.Fatalf("Degraded %+v", d)
	}
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := e.srv.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=probe"})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == wasmpolicy.EventFailed && ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, "kubelet n2") &&
				ev.InvolvedObject.Kind == "WasmPolicy" && ev.InvolvedObject.UID == p.UID {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no PolicyFailed Event on the policy: %v", err)
	}

	// n2 goes away: 1/1, Ready.
	e.node("n2", false, ssd)
	p = e.until("probe", "1/1 Ready", readyIs(1, 1, metav1.ConditionTrue))
	if len(p.Status.Components) != 1 || p.Status.Components[0].Name != "n1" {
		t.Fatalf("components %+v", p.Status.Components)
	}
}

// TestRollupFromIdentityLeases: an admission policy targets the API servers holding an
// identity Lease, a scheduler policy the schedulers running its profile; one that stops
// (its Lease deleted) drops out.
func TestRollupFromIdentityLeases(t *testing.T) {
	e := start(t)
	e.create("deny", policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookAdmissionValidate, Module: policyv1alpha1.ModuleSource{File: "/m.wasm"},
		Admission: &policyv1alpha1.AdmissionHook{Rules: []policyv1alpha1.Rule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Operations: []string{"CREATE"}}}}})
	e.create("score", policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookSchedulerScore, Module: policyv1alpha1.ModuleSource{File: "/m.wasm"}})
	e.until("deny", "0/0", readyIs(0, 0, metav1.ConditionFalse))

	hb := func(cfg *rest.Config, id report.Identity) context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); report.Heartbeat(ctx, kubernetes.NewForConfigOrDie(cfg), id, nil) }()
		stop := func() { cancel(); <-done }
		t.Cleanup(stop)
		return stop
	}
	stopAPI2 := hb(e.srv.Config, report.Identity{Component: policyv1alpha1.ComponentAPIServer, Instance: "api-2"})
	hb(e.srv.Config, report.Identity{Component: policyv1alpha1.ComponentAPIServer, Instance: "api-1"})
	hb(e.srv.SchedulerConfig(t), report.Identity{Component: policyv1alpha1.ComponentScheduler, Instance: "sched-a", SchedulerNames: func() []string { return []string{"default-scheduler"} }})
	hb(e.srv.SchedulerConfig(t), report.Identity{Component: policyv1alpha1.ComponentScheduler, Instance: "sched-b", SchedulerNames: func() []string { return []string{"batch"} }})
	e.until("deny", "0/2", readyIs(0, 2, metav1.ConditionFalse))
	e.until("score", "0/1 (only the default-scheduler profile)", readyIs(0, 1, metav1.ConditionFalse))

	sink(t, e.srv.Config, policyv1alpha1.ComponentAPIServer, "api-1").Observe("deny", policyv1alpha1.ComponentStatus{ObservedGeneration: 1, Phase: policyv1alpha1.PhaseActive})
	sink(t, e.srv.SchedulerConfig(t), policyv1alpha1.ComponentScheduler, "sched-a").Observe("score", policyv1alpha1.ComponentStatus{ObservedGeneration: 1, Phase: policyv1alpha1.PhaseActive})
	e.until("deny", "1/2", readyIs(1, 2, metav1.ConditionFalse))
	e.until("score", "1/1", readyIs(1, 1, metav1.ConditionTrue))
	stopAPI2()
	e.until("deny", "1/1 once api-2 stopped", readyIs(1, 1, metav1.ConditionTrue))
}

// TestRevisionsAndRollback: each spec is a numbered revision (status.revision); setting
// spec.revision puts that revision's spec back (a new generation, renumbered as the
// newest, spec.revision cleared); an unknown revision is refused with an Event and cleared.
func TestRevisionsAndRollback(t *testing.T) {
	e := start(t)
	e.create("p", policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookSchedulerFilter, Module: policyv1alpha1.ModuleSource{File: "/v1.wasm"}})
	e.until("p", "revision 1", func(p *policyv1alpha1.WasmPolicy) bool { return p.Status.Revision == 1 })
	e.update("p", func(s *policyv1alpha1.WasmPolicySpec) { s.Module.File = "/v2.wasm" })
	e.until("p", "revision 2", func(p *policyv1alpha1.WasmPolicy) bool { return p.Status.Revision == 2 })

	e.update("p", func(s *policyv1alpha1.WasmPolicySpec) { s.Revision = ptr.To[int64](1) })
	p := e.until("p", "rolled back to v1 as revision 3", func(p *policyv1alpha1.WasmPolicy) bool {
		return p.Spec.Module.File == "/v1.wasm" && p.Spec.Revision == nil && p.Status.Revision == 3 && p.Status.ObservedGeneration == p.Generation
	})
	if p.Generation != 4 { // create, v2, spec.revision set, rollback
		t.Fatalf("generation %d after the rollback, want 4", p.Generation)
	}
	revs, err := e.srv.Client.AppsV1().ControllerRevisions(wasmpolicy.RevisionNamespace).List(e.ctx, metav1.ListOptions{LabelSelector: wasmpolicy.PolicyUIDLabel + "=" + string(p.UID)})
	if err != nil || len(revs.Items) != 2 {
		t.Fatalf("revisions %v %v, want 2 (v1 renumbered 3, v2)", revs, err)
	}

	e.update("p", func(s *policyv1alpha1.WasmPolicySpec) { s.Revision = ptr.To[int64](9) })
	e.until("p", "spec.revision 9 cleared, spec kept", func(p *policyv1alpha1.WasmPolicy) bool {
		return p.Spec.Revision == nil && p.Spec.Module.File == "/v1.wasm" && p.Status.ObservedGeneration == p.Generation
	})
}

// countWrites counts the write requests (not GET) whose path contains what.
type countWrites struct {
	rt   http.RoundTripper
	what string
	n    *atomic.Int64
}

func (c countWrites) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && strings.Contains(r.URL.Path, c.what) {
		c.n.Add(1)
	}
	return c.rt.RoundTrip(r)
}

// TestWritesPerChangeAt100Kubelets: 100 kubelets take a change of a policy (Pending,
// Fetching, Active each): 100 report writes, one per component, READY 100/100; the same
// statuses observed again cost no report write and no status write of the policy.
func TestWritesPerChangeAt100Kubelets(t *testing.T) {
	e := start(t)
	const n = 100
	for i := 0; i < n; i++ {
		e.node(fmt.Sprintf("n%03d", i), true, nil)
	}
	spec := policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookKubeletProbe, Module: policyv1alpha1.ModuleSource{File: "/m.wasm"},
		Kubelet: &policyv1alpha1.KubeletHook{HookName: "h"}}
	e.create("p", spec)
	e.create("q", spec)
	e.until("p", "0/100", readyIs(0, n, metav1.ConditionFalse))

	digest := "sha256:" + strings.Repeat("d", 64)
	reportWrites := &atomic.Int64{}
	cfg := rest.CopyConfig(e.srv.Config)
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countWrites{rt: rt, what: "/wasmpolicyreports", n: reportWrites}
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	sinks := make([]*report.Sink, n)
	for i := range sinks {
		s, err := report.New(report.Options{Client: dyn, Component: policyv1alpha1.ComponentKubelet, Instance: fmt.Sprintf("n%03d", i), Settle: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		sinks[i] = s
	}
	for _, s := range sinks {
		for _, ph := range []policyv1alpha1.Phase{policyv1alpha1.PhasePending, policyv1alpha1.PhaseFetching, policyv1alpha1.PhaseActive} {
			s.Observe("p", policyv1alpha1.ComponentStatus{ObservedGeneration: 1, Phase: ph, Digest: digest})
		}
	}
	e.until("p", "100/100", readyIs(n, n, metav1.ConditionTrue))
	if got := reportWrites.Load(); got != n {
		t.Fatalf("%d report writes for one change on %d kubelets, want %d", got, n, n)
	}
	// Nothing changes for p: the sinks write only q's reports, the controller nothing for p.
	rvBefore := e.get("p").ResourceVersion
	for _, s := range sinks {
		s.Observe("p", policyv1alpha1.ComponentStatus{ObservedGeneration: 1, Phase: policyv1alpha1.PhaseActive, Digest: digest})
		s.Observe("q", policyv1alpha1.ComponentStatus{ObservedGeneration: 1, Phase: policyv1alpha1.PhaseActive, Digest: digest})
	}
	e.until("q", "100/100", readyIs(n, n, metav1.ConditionTrue))
	if got := reportWrites.Load(); got != 2*n {
		t.Fatalf("%d report writes, want %d (p's unchanged statuses are not written)", got, 2*n)
	}
	if rv := e.get("p").ResourceVersion; rv != rvBefore {
		t.Fatalf("p was written (resourceVersion %s -> %s) while nothing about it changed", rvBefore, rv)
	}
}
