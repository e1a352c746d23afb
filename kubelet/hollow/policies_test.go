package hollow_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	wpcontroller "github.com/wasmkube/wasmkube/core/controller/wasmpolicy"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// TestHollowNodesLoadPolicies: hollow nodes started with Policies carry the annotation the
// roll-up counts them by, load a kubelet probe WasmPolicy on the nodes its nodeSelector
// matches (zone-0 of three) and write those nodes' reports, Active; the others report
// nothing. The roll-up's targets are the loading nodes that match; hollow nodes started
// without Policies are no target, and a restart without them takes the annotation away.
func TestHollowNodesLoadPolicies(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	module := wasmbuild.WAT(t, "plugins/wasmpolicy/testdata/say-no.wat")
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&policyv1alpha1.WasmPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "say-no"},
		Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookKubeletProbe, Module: policyv1alpha1.ModuleSource{File: module},
			Kubelet: &policyv1alpha1.KubeletHook{HookName: "say-no",
				NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelTopologyZone: "zone-0"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := dyn.Resource(report.PoliciesResource).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(policies *hollow.PolicyOptions) (stop func()) {
		hctx, cancel := context.WithCancel(ctx)
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- hollow.Run(hctx, srv.Config, hollow.Options{Count: 4, Prefix: "h-", Ready: ready, Logger: log, Policies: policies})
		}()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("hollow.Run: %v", err)
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("hollow.Run: %v", err)
			}
		}
	}
	stop := start(&hollow.PolicyOptions{CacheDir: t.TempDir()})

	reports := dyn.Resource(report.ReportsResource)
	var got policyv1alpha1.WasmPolicyReport
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := reports.Get(ctx, report.Name("say-no", wasmpolicy.ComponentKubelet, "h-0"), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = policyv1alpha1.WasmPolicyReport{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
			return false, err
		}
		return got.Status.Phase == policyv1alpha1.PhaseActive, nil
	}); err != nil {
		t.Fatalf("h-0 (zone-0) never reported say-no Active: %v; last %+v", err, got.Status)
	}
	if got.Status.Name != "h-0" || got.Status.ObservedGeneration != pol.GetGeneration() || got.Status.Digest == "" {
		t.Fatalf("h-0's report: %+v", got.Status)
	}
	// h-3 is in zone-0 too (i mod 3); h-1 and h-2 are not and report nothing.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := reports.Get(ctx, report.Name("say-no", wasmpolicy.ComponentKubelet, "h-3"), metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("h-3 (zone-0) never reported: %v", err)
	}
	list, err := reports.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("reports: %v, %d (want h-0's and h-3's only)", err, len(list.Items))
	}

	targets := func() []wpcontroller.Target {
		t.Helper()
		nl, err := srv.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var nodes []*v1.Node
		for i := range nl.Items {
			nodes = append(nodes, &nl.Items[i])
		}
		p := &policyv1alpha1.WasmPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pol.Object, p); err != nil {
			t.Fatal(err)
		}
		ts, _ := wpcontroller.Targets(p, nodes, nil, time.Now())
		return ts
	}
	if ts := targets(); fmt.Sprint(ts) != fmt.Sprint([]wpcontroller.Target{{Component: "kubelet", Name: "h-0"}, {Component: "kubelet", Name: "h-3"}}) {
		t.Fatalf("roll-up targets with loading hollow nodes: %v", ts)
	}
	stop()

	// Started again without policies: the annotation goes, and so do the targets.
	stop = start(nil)
	defer stop()
	n, err := srv.Client.CoreV1().Nodes().Get(ctx, "h-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Annotations[report.LoadsPoliciesAnnotation]; ok {
		t.Fatalf("h-0 restarted without policies still carries %s", report.LoadsPoliciesAnnotation)
	}
	if ts := targets(); len(ts) != 0 {
		t.Fatalf("roll-up targets with hollow nodes that load nothing: %v", ts)
	}
}
