package apiserver_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// refuseLabelled stands for the validators the caller appends to the chain (wasm
// policies, CEL policies, webhooks): it refuses pods labelled refuse=yes.
type refuseLabelled struct{}

func (refuseLabelled) Validate(_ context.Context, a *admission.Attributes) error {
	if p, ok := a.Object.(*corev1.Pod); ok && p.Labels["refuse"] == "yes" {
		return admission.Forbidden(a, "refused by the policy under test")
	}
	return nil
}

// TestResourceQuotaIsTheLastValidatingStep: as upstream orders its plugins, ResourceQuota
// runs after every validator the caller adds, so a pod one of them refuses is not charged
// to the namespace's quota, and a refusal is the validator's own even when the quota is
// full.
func TestResourceQuotaIsTheLastValidatingStep(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithAdmission(refuseLabelled{}))
	ctx := context.Background()
	cs := srv.Client
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, refuse bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if refuse {
			p.Labels = map[string]string{"refuse": "yes"}
		}
		return p
	}
	used := func() string {
		t.Helper()
		q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "pods", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, ok := q.Status.Used[corev1.ResourcePods]
		if !ok {
			return "uncharged"
		}
		return n.String()
	}

	_, err := cs.CoreV1().Pods("default").Create(ctx, pod("refused-1", true), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "refused by the policy under test") {
		t.Fatalf("a pod the policy refuses: %v", err)
	}
	if u := used(); u != "uncharged" {
		t.Fatalf("after a refused pod the quota's status.used pods is %s: the refused pod was charged", u)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("admitted", false), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod within the quota: %v", err)
	}
	if u := used(); u != "1" {
		t.Fatalf("after an admitted pod the quota's status.used pods is %s, want 1", u)
	}
	// the quota is full: the policy, which runs first, still gives its own refusal
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod("refused-2", true), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "refused by the policy under test") {
		t.Fatalf("a pod the policy refuses, with the quota full: %v (want the policy's refusal, not the quota's)", err)
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod("over", false), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: pods") {
		t.Fatalf("a pod over the quota: %v", err)
	}
	if u := used(); u != "1" {
		t.Fatalf("the quota's status.used pods is %s, want 1", u)
	}
}
