package main

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/controller/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// TestPolicyHistoryAndRollback: `wasmkube policy history` lists the revisions the
// controller keeps with the current one marked; `wasmkube policy rollback` puts the one
// before back (the controller renumbers it as the newest); --to-revision of a revision not
// kept is refused, naming the ones that are.
func TestPolicyHistoryAndRollback(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := srv.ControllerManagerConfig(t)
	client, dyn := kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
	f, df := informers.NewSharedInformerFactory(client, 0), dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	c, err := wasmpolicy.New(client, dyn, f, df, nil, nil, wasmpolicy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	df.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 1) }()
	t.Cleanup(func() { cancel(); <-done })

	admin := dynamic.NewForConfigOrDie(srv.Config).Resource(report.PoliciesResource)
	get := func() *policyv1alpha1.WasmPolicy {
		u, err := admin.Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := &policyv1alpha1.WasmPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	waitRevision := func(n int64) *policyv1alpha1.WasmPolicy {
		var p *policyv1alpha1.WasmPolicy
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			p = get()
			return p.Status.Revision == n && p.Status.ObservedGeneration == p.Generation, nil
		}); err != nil {
			t.Fatalf("status.revision never %d: %+v", n, p.Status)
		}
		return p
	}
	p := &policyv1alpha1.WasmPolicy{TypeMeta: metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookSchedulerScore, Module: policyv1alpha1.ModuleSource{File: "/v1.wasm"}}}
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if _, err := admin.Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitRevision(1)
	p.Spec.Module.File = "/v2.wasm"
	p.Annotations = map[string]string{wasmpolicy.ChangeCauseAnnotation: "try v2"}
	m, _ = runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if _, err := admin.Update(ctx, &unstructured.Unstructured{Object: m}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRevision(2)

	out, err := runCLI(t, "policy", "history", "p", "--kubeconfig", srv.KubeconfigPath)
	if err != nil {
		t.Fatalf("history: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "REVISION") || !strings.HasPrefix(lines[1], "1 ") || !strings.Contains(lines[1], "file:/v1.wasm") ||
		!strings.HasPrefix(lines[2], "2 *") || !strings.Contains(lines[2], "file:/v2.wasm") || !strings.Contains(lines[2], "try v2") ||
		!strings.Contains(lines[2], "scheduler.score") || !strings.Contains(lines[2], "Enforce") {
		t.Fatalf("history:\n%s", out)
	}

	out, err = runCLI(t, "policy", "rollback", "p", "--kubeconfig", srv.KubeconfigPath)
	if err != nil || !strings.Contains(out, "rolled back to revision 1") {
		t.Fatalf("rollback: %v\n%s", err, out)
	}
	if p = waitRevision(3); p.Spec.Module.File != "/v1.wasm" {
		t.Fatalf("spec after the rollback: %+v", p.Spec)
	}
	out, err = runCLI(t, "policy", "rollback", "p", "--to-revision", "7", "--kubeconfig", srv.KubeconfigPath)
	if err == nil || !strings.Contains(out+err.Error(), "no revision 7 is kept (kept: [2 3]") {
		t.Fatalf("rollback to a revision not kept: %v\n%s", err, out)
	}
	out, err = runCLI(t, "policy", "rollback", "p", "--to-revision", "2", "--kubeconfig", srv.KubeconfigPath)
	if err != nil || !strings.Contains(out, "rolled back to revision 2") {
		t.Fatalf("rollback --to-revision 2: %v\n%s", err, out)
	}
	if p = waitRevision(4); p.Spec.Module.File != "/v2.wasm" {
		t.Fatalf("spec after the rollback: %+v", p.Spec)
	}
}
