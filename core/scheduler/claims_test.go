package scheduler_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/core/scheduler"
)

func withClaim(claim string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To(claim)})
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	}
}

// TestResourceClaims: the scheduler leaves a pod whose ResourceClaims it cannot honour
// Pending, with a FailedScheduling reason naming the claim (missing, not yet created from
// its template, not allocated: wasmkube allocates no devices), and binds a pod whose claim
// is allocated onto a node the allocation admits, reserving the claim for it.
func TestResourceClaims(t *testing.T) {
	c := newCluster(t, 3)
	c.startScheduler(scheduler.Options{})
	claims := c.client.ResourceV1().ResourceClaims("default")

	c.createPod("missing", withClaim("gpu"))
	p := c.waitPod("missing", "unschedulable", unschedulable)
	if want := `0/3 nodes are available: resourceclaim "default/gpu" not found.`; !strings.HasPrefix(schedMessage(p), want) {
		t.Fatalf("message %q, want prefix %q", schedMessage(p), want)
	}
	c.waitEvent("missing", "FailedScheduling", `resourceclaim "default/gpu" not found`)

	c.createPod("templated", func(p *v1.Pod) {
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-template")}}
	})
	p = c.waitPod("templated", "unschedulable", unschedulable)
	if want := `pod "default/templated": ResourceClaim not created yet`; !strings.Contains(schedMessage(p), want) {
		t.Fatalf("message %q, want %q", schedMessage(p), want)
	}

	claim, err := claims.Create(c.ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.createPod("unallocated", withClaim("gpu"))
	p = c.waitPod("unallocated", "unschedulable", unschedulable)
	if want := `0/3 nodes are available: resourceclaim "default/gpu": is not allocated, and wasmkube's scheduler does not allocate devices`; !strings.HasPrefix(schedMessage(p), want) {
		t.Fatalf("message %q, want prefix %q", schedMessage(p), want)
	}

	// Allocated elsewhere (as a DRA allocator would write it) to hollow-1's devices.
	claim.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: "gpu.example.com", Pool: "hollow-1", Device: "gpu-0"}}},
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"hollow-1"}}}}}},
	}
	if _, err := claims.UpdateStatus(c.ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.createPod("allocated", withClaim("gpu"))
	p = c.waitPod("allocated", "bound", bound)
	if p.Spec.NodeName != "hollow-1" {
		t.Fatalf("allocated on %s, want hollow-1 (the allocation's node)", p.Spec.NodeName)
	}
	claim, err = claims.Get(c.ctx, "gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := claim.Status.ReservedFor; len(r) != 1 || r[0].Resource != "pods" || r[0].Name != "allocated" || r[0].UID != p.UID {
		t.Fatalf("claim reservedFor %+v, want the pod", r)
	}
}
