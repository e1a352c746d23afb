package apiserver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/apiserver/validation"
	"github.com/wasmkube/wasmkube/core/storage"
	"github.com/wasmkube/wasmkube/internal/quota"
)

// policyAdmission backs the built-in LimitRanger, Priority and ResourceQuota plugins
// (docs/api-objects.md): LimitRanges and PriorityClasses are read from the object reader's
// caches (a pod create must not cost extra etcd reads); quotas are read from etcd, only
// when the cache says the namespace has one, because a charge must start from the newest
// status.
type policyAdmission struct {
	s      *Server
	reader *objectReader // set once the server's reader exists, before serving
}

// plugins are LimitRanger and Priority, which run before the caller's plugins (their
// mutating halves default the object every later plugin sees).
func (p *policyAdmission) plugins() []admission.Plugin {
	return []admission.Plugin{
		admission.LimitRanger{List: p.limitRanges},
		admission.Priority{List: p.priorityClasses},
	}
}

// quota is ResourceQuota, the chain's last validating step (as upstream's): a request a
// wasm policy, CEL policy or webhook refuses is never charged.
func (p *policyAdmission) quota() admission.Plugin { return admission.ResourceQuota{Store: p} }

func listAs[T any](p *policyAdmission, ctx context.Context, res, ns string) ([]*T, error) {
	if p.reader == nil {
		return nil, errors.New("object reader not started")
	}
	objs, err := p.reader.List(ctx, res, ns)
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(objs))
	for _, o := range objs {
		if t, ok := any(o).(*T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

func (p *policyAdmission) limitRanges(ctx context.Context, ns string) ([]*corev1.LimitRange, error) {
	return listAs[corev1.LimitRange](p, ctx, "limitranges", ns)
}

func (p *policyAdmission) priorityClasses(ctx context.Context) ([]*schedulingv1.PriorityClass, error) {
	return listAs[schedulingv1.PriorityClass](p, ctx, "priorityclasses", "")
}

var quotaGVR = corev1.SchemeGroupVersion.WithResource("resourcequotas")

// List implements admission.QuotaStore.
func (p *policyAdmission) List(ctx context.Context, ns string) ([]*corev1.ResourceQuota, error) {
	cached, err := listAs[corev1.ResourceQuota](p, ctx, "resourcequotas", ns)
	if err != nil || len(cached) == 0 {
		return nil, err
	}
	st := p.s.stores[quotaGVR]
	list, err := st.Storage.List(ctx, st.Prefix(ns), storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	items := list.(*corev1.ResourceQuotaList).Items
	out := make([]*corev1.ResourceQuota, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out, nil
}

// UpdateStatus implements admission.QuotaStore.
func (p *policyAdmission) UpdateStatus(ctx context.Context, q *corev1.ResourceQuota) error {
	st := p.s.stores[quotaGVR]
	rv := q.ResourceVersion
	_, err := st.Storage.GuaranteedUpdate(ctx, st.Key(q.Namespace, q.Name), &storage.Preconditions{ResourceVersion: &rv}, func(cur runtime.Object) (runtime.Object, error) {
		up := cur.(*corev1.ResourceQuota).DeepCopy()
		up.Status = q.Status
		return up, nil
	})
	if errors.Is(err, storage.ErrConflict) {
		return admission.ErrQuotaConflict
	}
	return err
}

// Usage implements admission.QuotaStore: pods and the standard object counts.
func (p *policyAdmission) Usage(ctx context.Context, ns string) (corev1.ResourceList, error) {
	pods, err := listAs[corev1.Pod](p, ctx, "pods", ns)
	if err != nil {
		return nil, err
	}
	used := corev1.ResourceList{}
	for _, pod := range pods {
		used = quota.Add(used, quota.PodUsage(pod))
	}
	for gr := range quota.ObjectCountNames {
		if gr.Resource == "pods" {
			continue
		}
		if _, _, ok := p.reader.Resource(gr.Resource); !ok {
			continue
		}
		objs, err := p.reader.List(ctx, gr.Resource, ns)
		if err != nil {
			return nil, err
		}
		for range objs {
			used = quota.Add(used, quota.ObjectUsage(schema.GroupResource{Resource: gr.Resource}))
		}
	}
	return used, nil
}

// seedPriorityClasses creates system-cluster-critical and system-node-critical, as
// upstream's API server does at start.
func (s *Server) seedPriorityClasses(ctx context.Context) error {
	st, ok := s.stores[schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")]
	if !ok {
		return nil
	}
	for name, value := range validation.SystemPriorityClasses {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."}
		if name == "system-node-critical" {
			pc.Description = "Used for system critical pods that must not be moved from their current node."
		}
		st.PrepareForCreate(pc, metav1.Now())
		defaults.Default(pc)
		if _, err := st.Storage.Create(ctx, st.Key("", name), st.TrackServerWrite(registry.ServerManager, nil, pc)); err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
			return fmt.Errorf("apiserver: create priority class %s: %w", name, err)
		}
	}
	return nil
}
