package admitwasm

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// SmokePod is the pod of the smoke request: one container, requests set, no labels.
func SmokePod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wasmkube-smoke", Namespace: "default", UID: "wasmkube-smoke"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
		}}}, RestartPolicy: v1.RestartPolicyAlways, DNSPolicy: v1.DNSClusterFirst},
	}
}

// SmokeRequest is the synthetic request of smoke calls: the CREATE of SmokePod in
// default by user system:wasmkube:smoke, as a dry run.
func SmokeRequest() *admission.Attributes {
	return &admission.Attributes{
		Operation: admission.Create,
		Kind:      v1.SchemeGroupVersion.WithKind("Pod"),
		Resource:  v1.SchemeGroupVersion.WithResource("pods"),
		Namespace: "default", Name: "wasmkube-smoke",
		Object: SmokePod(),
		User:   admission.UserInfo{Name: "system:wasmkube:smoke", Groups: []string{"system:authenticated"}},
		DryRun: true,
	}
}

// Smoke calls the admission entry points the pool's module exports once with
// SmokeRequest, as a request would: Mutate first (its patch applied and checked), then
// Validate on the result. A trap, timeout, memory or pointer fault, or garbage result
// (a patch that does not apply to the pod is one) is an error; a policy that returns a
// verdict (allowed, denied, or Error with a reason) passes.
func Smoke(ctx context.Context, pool *wasmhost.Pool) error {
	a := SmokeRequest()
	req := NewRequest(a)
	for _, k := range pool.Module().Kinds().Intersect(Kinds) {
		c := &Call{Kind: k, Attributes: a}
		if err := c.Do(ctx, pool, req); err != nil {
			var ce *wasmhost.CallError
			if errors.As(err, &ce) && ce.Reason == wasmhost.ReasonError {
				continue
			}
			return fmt.Errorf("smoke call of %s: %w", k.Export, err)
		}
		if c.Patched != nil {
			a.Object = c.Patched
			req = NewRequest(a)
		}
	}
	return nil
}
