package wasmpolicy_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

const sayNo = `apiVersion: policy.wasmkube.io/v1alpha1
kind: WasmPolicy
metadata: {name: say-no}
spec:
  hook: kubelet.probe
  mode: %s
  module: {file: %s}
  kubelet: {hookName: say-no, nodeSelector: {matchLabels: {zone: a}}}
`

// succeed is the pod's own probe: it always succeeds.
type succeed struct{}

func (succeed) Probe(context.Context, probe.Target, *corev1.ProbeHandler) (probe.Result, string, error) {
	return probe.Success, "", nil
}

func (succeed) PreStop(context.Context, probe.Target, *corev1.LifecycleHandler) error { return nil }

// kubelet is one node's hook plugins with the loader of its API tier.
type kubelet struct {
	hooks  *nodewasm.Hooks
	sink   *sink
	loader *wasmpolicy.Loader
}

func startKubelet(t *testing.T, srv *apiservertest.Server, dyn dynamic.Interface, node string, m *wasmpolicy.Metrics) *kubelet {
	t.Helper()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{hooks: nodewasm.New(h, quiet()).WithMetrics(m), sink: &sink{}}
	t.Cleanup(k.hooks.Close)
	k.loader = startLoader(t, wasmpolicy.Config{Component: wasmpolicy.ComponentKubelet, Name: node, Dynamic: dyn, Client: srv.Client,
		Target: k.hooks, Sink: k.sink})
	return k
}

// TestKubeletProbeWasmPolicy: a probe WasmPolicy with a nodeSelector loads on the nodes it
// selects only (and on a node relabelled to match); in Monitor the pod's own probe
// decides and the plugin's other verdict is counted; in Enforce the plugin decides.
func TestKubeletProbeWasmPolicy(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithListen("127.0.0.1:27104"))
	ctx := context.Background()
	for node, zone := range map[string]string{"node-a": "a", "node-b": "b"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"zone": zone}}}
		if _, err := srv.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	module := wasmbuild.WAT(t, "plugins/wasmpolicy/testdata/say-no.wat")
	gen := apply(t, dyn, fmt.Sprintf(sayNo, "Monitor", module))

	m := wasmpolicy.NewMetrics(prometheus.NewRegistry())
	a := startKubelet(t, srv, dyn, "node-a", m)
	b := startKubelet(t, srv, dyn, "node-b", m)
	if st := a.sink.await(t, "say-no", gen, policyv1alpha1.PhaseActive); st.Name != "node-a" || st.Component != wasmpolicy.ComponentKubelet {
		t.Fatalf("node-a: %+v", st)
	}
	<-b.loader.Synced()
	if got := b.hooks.Plugins(); len(got) != 0 {
		t.Fatalf("node-b (zone b) loaded %v", got)
	}
	b.sink.mu.Lock()
	if len(b.sink.all) != 0 {
		t.Fatalf("node-b reported on a policy that does not select it: %+v", b.sink.all)
	}
	b.sink.mu.Unlock()
	if got := a.hooks.Plugins(); !slices.Equal(got, []string{"say-no"}) {
		t.Fatalf("node-a plugins %v", got)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{nodewasm.Annotation("liveness", "web"): "say-no"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}}}
	tgt := probe.Target{Pod: pod, Container: &pod.Spec.Containers[0], PodIP: "127.0.0.1", Kind: probe.Liveness}
	pr, _ := a.hooks.Runners(succeed{}, succeed{}, nil)
	if r, msg, err := pr.Probe(ctx, tgt, &corev1.ProbeHandler{}); r != probe.Success || err != nil {
		t.Fatalf("Monitor: the pod's own probe must decide: %s %q %v", r, msg, err)
	}
	if c, d := testutil.ToFloat64(m.MonitorComparisons.WithLabelValues("say-no", wasmpolicy.ComponentKubelet)),
		testutil.ToFloat64(m.MonitorDisagreements.WithLabelValues("say-no", wasmpolicy.ComponentKubelet)); c != 1 || d != 1 {
		t.Fatalf("Monitor: %v comparisons, %v disagreements; want 1 and 1", c, d)
	}

	gen = apply(t, dyn, fmt.Sprintf(sayNo, "Enforce", module))
	a.sink.await(t, "say-no", gen, policyv1alpha1.PhaseActive)
	if r, msg, _ := pr.Probe(ctx, tgt, &corev1.ProbeHandler{}); r != probe.Failure {
		t.Fatalf("Enforce: %s %q, want the plugin's failure", r, msg)
	}

	// node-b relabelled into zone a loads it too.
	nb, err := srv.Client.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nb.Labels["zone"] = "a"
	if _, err := srv.Client.CoreV1().Nodes().Update(ctx, nb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.sink.await(t, "say-no", gen, policyv1alpha1.PhaseActive)
	if got := b.hooks.Plugins(); !slices.Equal(got, []string{"say-no"}) {
		t.Fatalf("node-b after relabelling: %v", got)
	}
}
