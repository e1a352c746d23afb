package dynamicresources

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestClaimName(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Status: v1.PodStatus{ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "made", ResourceClaimName: ptr.To("p-made-x1")}, {Name: "skipped"}}}}
	for _, c := range []struct {
		claim      v1.PodResourceClaim
		name       string
		checkOwner bool
		err        error
		msg        string
	}{
		{claim: v1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("gpu")}, name: "gpu"},
		{claim: v1.PodResourceClaim{Name: "made", ResourceClaimTemplateName: ptr.To("t")}, name: "p-made-x1", checkOwner: true},
		{claim: v1.PodResourceClaim{Name: "skipped", ResourceClaimTemplateName: ptr.To("t")}, checkOwner: true},
		{claim: v1.PodResourceClaim{Name: "later", ResourceClaimTemplateName: ptr.To("t")}, err: ErrNotCreated, msg: `pod "ns/p": ResourceClaim not created yet`},
		{claim: v1.PodResourceClaim{Name: "bad"}, msg: `spec.resourceClaim "bad": neither resourceClaimName nor resourceClaimTemplateName is set`},
	} {
		name, check, err := ClaimName(pod, &c.claim)
		if c.msg != "" {
			if err == nil || !strings.Contains(err.Error(), c.msg) || c.err != nil && !errors.Is(err, c.err) {
				t.Errorf("%s: err %v, want %q", c.claim.Name, err, c.msg)
			}
			continue
		}
		got := ""
		if name != nil {
			got = *name
		}
		if err != nil || got != c.name || check != c.checkOwner {
			t.Errorf("%s: %q %v %v, want %q %v", c.claim.Name, got, check, err, c.name, c.checkOwner)
		}
	}
}

func TestJudge(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"}}
	allocated := &resourcev1.AllocationResult{}
	now := metav1.Now()
	full := make([]resourcev1.ResourceClaimConsumerReference, resourcev1.ResourceClaimReservedForMaxSize)
	for i := range full {
		full[i] = resourcev1.ResourceClaimConsumerReference{Resource: "pods", UID: "other"}
	}
	for _, c := range []struct {
		name  string
		claim resourcev1.ResourceClaim
		owner bool
		want  string // "" admits the pod
	}{
		{"allocated", resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: allocated}}, false, ""},
		{"unallocated", resourcev1.ResourceClaim{}, false, "is not allocated"},
		{"deleting", resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: resourcev1.ResourceClaimStatus{Allocation: allocated}}, false, "is being deleted"},
		{"not the pod's", resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: allocated}}, true, "was not created for the pod"},
		{"the pod's", resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{UID: "pod-uid", Controller: ptr.To(true)}}},
			Status: resourcev1.ResourceClaimStatus{Allocation: allocated}}, true, ""},
		{"full", resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: allocated, ReservedFor: full}}, false, ErrReasonInUse},
		{"full but reserved for the pod", resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: allocated,
			ReservedFor: append(full[1:], resourcev1.ResourceClaimConsumerReference{Resource: "pods", UID: "pod-uid"})}}, false, ""},
	} {
		c.claim.Name, c.claim.Namespace = "gpu", "ns"
		e := Judge(pod, &c.claim, c.owner)
		switch {
		case c.want == "" && e != nil:
			t.Errorf("%s: refused: %v", c.name, e)
		case c.want != "" && (e == nil || !strings.Contains(e.Error(), c.want) || !strings.HasPrefix(e.Error(), `resourceclaim "ns/gpu": `)):
			t.Errorf("%s: %v, want %q naming the claim", c.name, e, c.want)
		}
	}
}

func TestSignPod(t *testing.T) {
	pl := &DynamicResources{}
	if f, st := pl.SignPod(context.Background(), &v1.Pod{}); st != nil || f != nil {
		t.Errorf("pod without claims: %v %v, want nothing signed", f, st)
	}
	if _, st := pl.SignPod(context.Background(), &v1.Pod{Spec: v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "gpu"}}}}); st == nil {
		t.Error("pod with claims: signed, want unsignable")
	}
}
