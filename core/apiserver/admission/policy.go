package admission

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wasmkube/wasmkube/internal/quota"
)

// ---- LimitRanger ----

// LimitRanger is upstream's plugin of the same name for pods: on create, containers
// without limits or requests get the Container defaults of the namespace's LimitRanges;
// then the min, max and maxLimitRequestRatio of Container and Pod items are enforced.
type LimitRanger struct {
	// List returns the LimitRanges of a namespace.
	List func(ctx context.Context, ns string) ([]*corev1.LimitRange, error)
}

func podCreate(a *Attributes) (*corev1.Pod, bool) {
	pod, ok := a.Object.(*corev1.Pod)
	return pod, ok && a.Operation == Create && a.Subresource == ""
}

// Admit implements MutationInterface.
func (p LimitRanger) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := podCreate(a)
	if !ok {
		return nil
	}
	lrs, err := p.List(ctx, a.Namespace)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("limit ranger: list limit ranges of %s: %w", a.Namespace, err))
	}
	for _, lr := range lrs {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for i := range pod.Spec.InitContainers {
				defaultResources(&pod.Spec.InitContainers[i].Resources, item)
			}
			for i := range pod.Spec.Containers {
				defaultResources(&pod.Spec.Containers[i].Resources, item)
			}
		}
	}
	return nil
}

// defaultResources is upstream's mergeContainerResources: a missing limit is the default,
// a missing request the defaultRequest.
func defaultResources(r *corev1.ResourceRequirements, item corev1.LimitRangeItem) {
	for k, v := range item.Default {
		if _, ok := r.Limits[k]; !ok {
			if r.Limits == nil {
				r.Limits = corev1.ResourceList{}
			}
			r.Limits[k] = v.DeepCopy()
		}
	}
	for k, v := range item.DefaultRequest {
		if _, ok := r.Requests[k]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[k] = v.DeepCopy()
		}
	}
}

// Validate implements ValidationInterface.
func (p LimitRanger) Validate(ctx context.Context, a *Attributes) error {
	pod, ok := podCreate(a)
	if !ok {
		return nil
	}
	lrs, err := p.List(ctx, a.Namespace)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("limit ranger: list limit ranges of %s: %w", a.Namespace, err))
	}
	var msgs []string
	for _, lr := range lrs {
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case corev1.LimitTypeContainer:
				for _, c := range pod.Spec.Containers {
					msgs = append(msgs, checkLimits(item, "Container", c.Resources.Requests, c.Resources.Limits)...)
				}
			case corev1.LimitTypePod:
				var req, lim corev1.ResourceList = corev1.ResourceList{}, corev1.ResourceList{}
				for _, c := range pod.Spec.Containers {
					req, lim = quota.Add(req, c.Resources.Requests), quota.Add(lim, c.Resources.Limits)
				}
				msgs = append(msgs, checkLimits(item, "Pod", req, lim)...)
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	sort.Strings(msgs)
	return Forbidden(a, joinMsgs(msgs))
}

func joinMsgs(m []string) string {
	s := m[0]
	for _, x := range m[1:] {
		s += ", " + x
	}
	return s
}

// checkLimits has upstream's messages ("minimum cpu usage per Container is 100m, but
// request is 50m").
func checkLimits(item corev1.LimitRangeItem, kind string, req, lim corev1.ResourceList) []string {
	var out []string
	for k, mn := range item.Min {
		r, hasR := req[k]
		switch {
		case !hasR:
			out = append(out, fmt.Sprintf("minimum %s usage per %s is %s.  No request is specified", k, kind, mn.String()))
		case r.Cmp(mn) < 0:
			out = append(out, fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", k, kind, mn.String(), r.String()))
		}
	}
	for k, mx := range item.Max {
		l, hasL := lim[k]
		switch {
		case !hasL:
			out = append(out, fmt.Sprintf("maximum %s usage per %s is %s.  No limit is specified", k, kind, mx.String()))
		case l.Cmp(mx) > 0:
			out = append(out, fmt.Sprintf("maximum %s usage per %s is %s, but limit is %s", k, kind, mx.String(), l.String()))
		}
	}
	for k, ratio := range item.MaxLimitRequestRatio {
		l, hasL := lim[k]
		r, hasR := req[k]
		if !hasL || !hasR || r.IsZero() {
			continue
		}
		got := float64(l.MilliValue()) / float64(r.MilliValue())
		if got > ratio.AsApproximateFloat64() {
			out = append(out, fmt.Sprintf("%s max limit to request ratio per %s is %s, but provided ratio is %f", k, kind, ratio.String(), got))
		}
	}
	return out
}

// ---- Priority ----

// Priority is upstream's Priority plugin: a pod's priorityClassName (or the global
// default class, when it names none) is resolved to spec.priority and
// spec.preemptionPolicy at creation (updates keep the stored values); a class that does
// not exist refuses the pod.
type Priority struct {
	List func(ctx context.Context) ([]*schedulingv1.PriorityClass, error)
}

// Admit implements MutationInterface.
func (p Priority) Admit(ctx context.Context, a *Attributes) error {
	if pod, ok := a.Object.(*corev1.Pod); ok && a.Operation == Update {
		// Set at creation and immutable: an update that leaves them out (kubectl replace
		// of the original manifest) keeps the stored values, as upstream's plugin does.
		if old, ok := a.OldObject.(*corev1.Pod); ok {
			pod.Spec.Priority, pod.Spec.PreemptionPolicy = old.Spec.Priority, old.Spec.PreemptionPolicy
		}
		return nil
	}
	pod, ok := podCreate(a)
	if !ok {
		return nil
	}
	classes, err := p.List(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("priority: list priority classes: %w", err))
	}
	var class *schedulingv1.PriorityClass
	if name := pod.Spec.PriorityClassName; name != "" {
		for _, c := range classes {
			if c.Name == name {
				class = c
			}
		}
		if class == nil {
			return Forbidden(a, fmt.Sprintf("no PriorityClass with name %s was found", name))
		}
	} else {
		for _, c := range classes {
			if c.GlobalDefault && (class == nil || c.Value > class.Value) {
				class = c
			}
		}
	}
	var value int32
	policy := corev1.PreemptLowerPriority
	if class != nil {
		value = class.Value
		if class.PreemptionPolicy != nil {
			policy = *class.PreemptionPolicy
		}
		if pod.Spec.PriorityClassName == "" {
			pod.Spec.PriorityClassName = class.Name
		}
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return Forbidden(a, fmt.Sprintf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != policy {
		return Forbidden(a, fmt.Sprintf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, policy))
	}
	pod.Spec.Priority = &value
	pod.Spec.PreemptionPolicy = &policy
	return nil
}

// ---- ResourceQuota ----

// ErrQuotaConflict is returned by QuotaStore.UpdateStatus when the quota changed since
// it was read.
var ErrQuotaConflict = errors.New("resource quota changed")

// QuotaStore reads the quotas of a namespace from storage (not a cache: the charge must
// start from the newest status) and writes a quota's status with a compare-and-swap on
// its resourceVersion.
type QuotaStore interface {
	List(ctx context.Context, ns string) ([]*corev1.ResourceQuota, error)
	UpdateStatus(ctx context.Context, q *corev1.ResourceQuota) error
	// Usage is the namespace's current usage, for a quota whose status the controller
	// has not computed yet.
	Usage(ctx context.Context, ns string) (corev1.ResourceList, error)
}

// ResourceQuota is upstream's plugin of the same name: a created object is charged to
// every quota of its namespace that limits what it uses (pods: counts, requests and
// limits; other objects: count/<resource> and the standard counts); one that would go
// over a hard limit is refused with upstream's message naming the quota and resource.
// The charge is written to the quota's status.used with a compare-and-swap, so
// concurrent creates cannot both take the last unit; the resourcequota controller later
// recomputes status.used from the objects (which releases deleted ones).
type ResourceQuota struct {
	Store QuotaStore
}

// Validate implements ValidationInterface.
func (p ResourceQuota) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" || a.Namespace == "" || a.Object == nil {
		return nil
	}
	var delta corev1.ResourceList
	pod, isPod := a.Object.(*corev1.Pod)
	if isPod {
		delta = quota.PodUsage(pod)
	} else {
		delta = quota.ObjectUsage(a.Resource.GroupResource())
	}
	for attempt := 0; attempt < 8; attempt++ {
		quotas, err := p.Store.List(ctx, a.Namespace)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("resource quota: list quotas of %s: %w", a.Namespace, err))
		}
		var charge []*corev1.ResourceQuota
		var current corev1.ResourceList
		for _, q := range quotas {
			touches := false
			for k := range q.Spec.Hard {
				if _, ok := delta[k]; ok {
					touches = true
				}
			}
			if isPod {
				if missing := quota.MissingRequests(pod, q.Spec.Hard); len(missing) > 0 {
					return Forbidden(a, fmt.Sprintf("failed quota: %s: must specify %s", q.Name, joinNames(missing)))
				}
			}
			if !touches {
				continue
			}
			used := q.Status.Used
			if !sameNames(q.Status.Hard, q.Spec.Hard) {
				if current == nil {
					if current, err = p.Store.Usage(ctx, a.Namespace); err != nil {
						return apierrors.NewInternalError(fmt.Errorf("resource quota: usage of %s: %w", a.Namespace, err))
					}
				}
				used = current
			}
			if over := quota.Exceeded(q.Spec.Hard, used, delta); len(over) > 0 {
				return Forbidden(a, fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
					q.Name, quota.Format(over, delta), quota.Format(over, quota.Mask(used, q.Spec.Hard)), quota.Format(over, q.Spec.Hard)))
			}
			up := q.DeepCopy()
			up.Status.Hard = q.Spec.Hard.DeepCopy()
			up.Status.Used = quota.Mask(quota.Add(used, delta), q.Spec.Hard)
			charge = append(charge, up)
		}
		if a.DryRun || len(charge) == 0 {
			return nil
		}
		conflict := false
		for _, up := range charge {
			if err := p.Store.UpdateStatus(ctx, up); errors.Is(err, ErrQuotaConflict) {
				conflict = true
				break
			} else if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("resource quota: charge %s: %w", up.Name, err))
			}
		}
		if !conflict {
			return nil
		}
	}
	return apierrors.NewConflict(a.Resource.GroupResource(), a.Name, errors.New("resource quotas changed too often while charging them; try again"))
}

func sameNames(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || w.Cmp(v) != 0 {
			return false
		}
	}
	return true
}

func joinNames(n []corev1.ResourceName) string {
	s := ""
	for i, x := range n {
		if i > 0 {
			s += ","
		}
		s += string(x)
	}
	return s
}
