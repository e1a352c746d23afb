package wasmpolicy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	wpcontroller "github.com/wasmkube/wasmkube/core/controller/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// startController runs the wasmpolicy controller (as the controller manager does) against
// srv until the test ends.
func startController(t *testing.T, srv *apiservertest.Server) {
	t.Helper()
	cfg := srv.ControllerManagerConfig(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	f := informers.NewSharedInformerFactory(client, 0)
	df := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	c, err := wpcontroller.New(client, dyn, f, df, b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: wpcontroller.Name}), quiet(), wpcontroller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	df.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 2) }()
	t.Cleanup(func() { cancel(); <-done; b.Shutdown() })
}

// awaitPolicy waits until the WasmPolicy satisfies ok and returns it.
func awaitPolicy(t *testing.T, dyn dynamic.Interface, name string, what string, ok func(*policyv1alpha1.WasmPolicy) bool) *policyv1alpha1.WasmPolicy {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p := &policyv1alpha1.WasmPolicy{}
		u, err := dyn.Resource(wasmPolicies).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p)
		}
		if err == nil && ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("WasmPolicy %s: never %s; status %+v (err %v)", name, what, p.Status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const pinned = `apiVersion: policy.wasmkube.io/v1alpha1
kind: WasmPolicy
metadata: {name: pinned}
spec:
  hook: admission.validate
  mode: %s
  module: {image: %s%s}
  admission:
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
`

// TestTagResolvedOnceCentrally: the controller resolves a policy's tag once for its
// generation and records it; every component fetches that digest, so a registry that moves
// the tag changes nothing (a component that joins later loads the first digest) until the
// spec changes under pullPolicy Always. A spec change that keeps the image keeps the digest
// without asking the registry. A tag that cannot be resolved leaves the policy Degraded
// with the registry's error and an Event, and the components waiting.
func TestTagResolvedOnceCentrally(t *testing.T) {
	reg := startRegistry(t, "127.0.0.1:27201")
	good := reg.push(t, "plugins/admitwasm/testdata/require-team.wat", "policies/pinned:v1")
	pol := newPolicies(t, prometheus.NewRegistry())
	srv := apiservertest.Start(t, apiservertest.WithAdmission(pol), apiservertest.WithListen("127.0.0.1:27202"))
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	startController(t, srv)
	recA := &sink{}
	startLoader(t, wasmpolicy.Config{Component: wasmpolicy.ComponentAPIServer, Name: "apiserver-a", Dynamic: dyn, Client: srv.Client,
		Target: pol, Cache: wasmoci.Options{Dir: t.TempDir()}, Sink: recA})
	image := reg.addr + "/policies/pinned:v1"
	tagReads := func() int { return reg.manifestReads("policies/pinned", "v1") }

	gen := apply(t, dyn, fmt.Sprintf(pinned, "Enforce", image, ""))
	if st := recA.await(t, "pinned", gen, policyv1alpha1.PhaseActive); st.Digest != good {
		t.Fatalf("Active on %s, want the digest the tag named, %s", st.Digest, good)
	}
	p := awaitPolicy(t, dyn, "pinned", "resolved", func(p *policyv1alpha1.WasmPolicy) bool { return p.Status.ResolvedGeneration == gen })
	if p.Status.Digest != good || p.Status.ResolvedImage != image {
		t.Fatalf("status: digest %s resolved from %q, want %s from %q", p.Status.Digest, p.Status.ResolvedImage, good, image)
	}
	if n := tagReads(); n != 1 {
		t.Fatalf("the tag was asked of the registry %d times, want once (by the controller)", n)
	}

	// The registry moves the tag; a component that joins now loads what was resolved.
	moved := reg.push(t, "plugins/admitwasm/testdata/broken.wat", "policies/pinned:v1")
	recB := &sink{}
	startLoader(t, wasmpolicy.Config{Component: wasmpolicy.ComponentAPIServer, Name: "apiserver-b", Dynamic: dyn, Client: srv.Client,
		Target: newPolicies(t, prometheus.NewRegistry()), Cache: wasmoci.Options{Dir: t.TempDir()}, Sink: recB})
	if st := recB.await(t, "pinned", gen, policyv1alpha1.PhaseActive); st.Digest != good {
		t.Fatalf("a component joining after the tag moved runs %s, want %s", st.Digest, good)
	}

	// A spec change that keeps the image (pullPolicy IfNotPresent, the default for v1):
	// the digest is kept, nobody asks the registry.
	gen = apply(t, dyn, fmt.Sprintf(pinned, "Monitor", image, ""))
	for _, r := range []*sink{recA, recB} {
		if st := r.await(t, "pinned", gen, policyv1alpha1.PhaseActive); st.Digest != good || st.Mode != policyv1alpha1.ModeMonitor {
			t.Fatalf("generation %d: %+v, want %s in Monitor", gen, st, good)
		}
	}
	if n := tagReads(); n != 1 {
		t.Fatalf("after a spec change that keeps the image the tag was asked %d times, want 1", n)
	}

	// pullPolicy Always resolves the tag again at each generation: both now load what it
	// names (the broken module: Failed, the last good revision stays).
	gen = apply(t, dyn, fmt.Sprintf(pinned, "Monitor", image, ", pullPolicy: Always"))
	for _, r := range []*sink{recA, recB} {
		if st := r.await(t, "pinned", gen, policyv1alpha1.PhaseFailed); st.Digest != moved || st.Reason != wasmpolicy.ReasonLoadFailed {
			t.Fatalf("pullPolicy Always: %+v, want LoadFailed on %s", st, moved)
		}
	}
	if n := tagReads(); n != 2 {
		t.Fatalf("with pullPolicy Always the tag was asked %d times in all, want 2", n)
	}

	// A tag the registry does not have: Degraded, with the registry's error and an Event;
	// the components wait for a digest.
	gen = apply(t, dyn, fmt.Sprintf(pinned, "Monitor", reg.addr+"/policies/pinned:nope", ""))
	p = awaitPolicy(t, dyn, "pinned", "Degraded by ResolveFailed", func(p *policyv1alpha1.WasmPolicy) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, wpcontroller.ConditionDegraded)
		return c != nil && c.ObservedGeneration == gen && c.Reason == wpcontroller.ReasonResolveFailed
	})
	if c := meta.FindStatusCondition(p.Status.Conditions, wpcontroller.ConditionDegraded); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "pinned:nope") {
		t.Fatalf("Degraded: %+v", c)
	}
	if st := recA.await(t, "pinned", gen, policyv1alpha1.PhasePending); st.Reason != wasmpolicy.ReasonAwaitingDigest {
		t.Fatalf("a component while the tag is not resolved: %+v", st)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := srv.Client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range evs.Items {
			found = found || (e.Reason == wpcontroller.EventResolveFailed && e.InvolvedObject.Name == "pinned" && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Message, "pinned:nope"))
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event on the policy: %+v", wpcontroller.EventResolveFailed, evs.Items)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tee passes each observation on to several sinks.
type tee []wasmpolicy.StatusSink

func (t tee) Observe(policy string, s policyv1alpha1.ComponentStatus) {
	for _, k := range t {
		k.Observe(policy, s)
	}
}

// apiServerComponent runs what an API server runs for its WasmPolicies besides its
// admission chain: a loader on target, its reports and its identity Lease. It returns the
// sink that records what the loader observed.
func apiServerComponent(t *testing.T, srv *apiservertest.Server, dyn dynamic.Interface, name string, target wasmpolicy.Target) *sink {
	t.Helper()
	rs, err := report.New(report.Options{Client: dyn, Component: wasmpolicy.ComponentAPIServer, Instance: name, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go rs.Run(ctx)
	go report.Heartbeat(ctx, srv.Client, report.Identity{Component: wasmpolicy.ComponentAPIServer, Instance: name}, quiet())
	rec := &sink{}
	startLoader(t, wasmpolicy.Config{Component: wasmpolicy.ComponentAPIServer, Name: name, Dynamic: dyn, Client: srv.Client,
		Target: target, Sink: tee{rec, rs}})
	return rec
}

const allOrNothing = `apiVersion: policy.wasmkube.io/v1alpha1
kind: WasmPolicy
metadata: {name: together}
spec:
  hook: admission.validate
  mode: %s
  rollout: AllOrNothing
  module: {file: %s}
  admission:
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
`

// TestAllOrNothingFlipsTogether: a policy on two API servers of different versions (the
// newer one's host has functions the older one's lacks). A revision the older one cannot
// load is staged on the newer one and put in force nowhere: the newer one keeps the last
// good revision, the policy is Degraded naming the older one. A revision both can load is
// staged on both, released by the controller, and in force on both.
func TestAllOrNothingFlipsTogether(t *testing.T) {
	// a: the API server whose admission chain the test's requests go through, on a host
	// that also has the scheduler's host functions; b: one whose host has only admission's.
	newer, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension, schedwasm.Extension}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	polA, err := admitwasm.New(context.Background(), admitwasm.Options{Host: newer, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { polA.Close(context.Background()) })
	polB := newPolicies(t, prometheus.NewRegistry())
	srv := apiservertest.Start(t, apiservertest.WithAdmission(polA), apiservertest.WithListen("127.0.0.1:27203"))
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	startController(t, srv)
	recA := apiServerComponent(t, srv, dyn, "apiserver-a", polA)
	recB := apiServerComponent(t, srv, dyn, "apiserver-b", polB)
	teamModule := wasmbuild.WAT(t, "plugins/admitwasm/testdata/require-team.wat")
	denyAll := wasmbuild.WAT(t, "plugins/wasmpolicy/testdata/deny-all-newer.wat")

	ctx := context.Background()
	n := 0
	createPod := func(team bool) error {
		n++
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", n)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if team {
			pod.Labels = map[string]string{"team": "a"}
		}
		_, err := srv.Client.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}
	released := func(gen int64) *policyv1alpha1.WasmPolicy {
		t.Helper()
		return awaitPolicy(t, dyn, "together", fmt.Sprintf("released at generation %d with 2/2 ready", gen), func(p *policyv1alpha1.WasmPolicy) bool {
			return p.Status.ReleasedGeneration == gen && p.Status.ReadyComponents == 2 && p.Status.TargetedComponents == 2
		})
	}

	// Generation 1 (Monitor): staged on both, released, in force on both.
	gen1 := apply(t, dyn, fmt.Sprintf(allOrNothing, "Monitor", teamModule))
	released(gen1)
	for _, r := range []*sink{recA, recB} {
		r.await(t, "together", gen1, policyv1alpha1.PhaseActive)
	}
	if err := createPod(false); err != nil {
		t.Fatalf("generation 1 is in Monitor: %v", err)
	}

	// Generation 2 (Enforce, a module b cannot load): staged on a, Failed on b; nobody
	// switches, so a still runs generation 1 in Monitor.
	gen2 := apply(t, dyn, fmt.Sprintf(allOrNothing, "Enforce", denyAll))
	if st := recA.await(t, "together", gen2, policyv1alpha1.PhaseStaged); st.Mode != policyv1alpha1.ModeMonitor {
		t.Fatalf("a while generation 2 is staged: %+v (the revision in force is generation 1's, in Monitor)", st)
	}
	if st := recB.await(t, "together", gen2, policyv1alpha1.PhaseFailed); st.Reason != wasmpolicy.ReasonLoadFailed || !strings.Contains(st.Message, "pod_requests") {
		t.Fatalf("b on generation 2: %+v", st)
	}
	p := awaitPolicy(t, dyn, "together", "Degraded by apiserver-b", func(p *policyv1alpha1.WasmPolicy) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, wpcontroller.ConditionDegraded)
		return c != nil && c.ObservedGeneration == gen2 && c.Status == metav1.ConditionTrue
	})
	if c := meta.FindStatusCondition(p.Status.Conditions, wpcontroller.ConditionDegraded); !strings.Contains(c.Message, "apiserver apiserver-b") || !strings.Contains(c.Message, "no component switches") {
		t.Fatalf("Degraded: %s", c.Message)
	}
	if p.Status.ReleasedGeneration != gen1 {
		t.Fatalf("releasedGeneration %d, want %d (generation %d failed on b)", p.Status.ReleasedGeneration, gen1, gen2)
	}
	if err := createPod(true); err != nil {
		t.Fatalf("a switched to generation 2 although b failed it: %v", err)
	}

	// Generation 3 (Enforce, a module both load): both switch.
	gen3 := apply(t, dyn, fmt.Sprintf(allOrNothing, "Enforce", teamModule))
	released(gen3)
	for _, r := range []*sink{recA, recB} {
		r.await(t, "together", gen3, policyv1alpha1.PhaseActive)
	}
	if err := createPod(false); !apierrors.IsForbidden(err) {
		t.Fatalf("generation 3 (Enforce) is in force on a and must refuse a pod without team: %v", err)
	}
	if err := createPod(true); err != nil {
		t.Fatalf("generation 3: a pod with team: %v", err)
	}
	staged := 0
	recA.mu.Lock()
	defer recA.mu.Unlock()
	for _, st := range recA.all {
		if st.ObservedGeneration == gen3 && st.Phase == policyv1alpha1.PhaseStaged {
			staged++
		}
	}
	if staged == 0 {
		t.Fatalf("a put generation 3 in force without staging it first: %+v", recA.all)
	}
}
