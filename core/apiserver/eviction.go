package apiserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// maxDisruptedPods bounds status.disruptedPods of a budget (upstream's MaxDisruptedPodSize):
// evictions the disruption controller has not confirmed yet.
const maxDisruptedPods = 2000

var pdbGVR = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")

// checkDisruptionBudget is upstream's eviction admission (pkg/registry/core/pod/storage/
// eviction.go): the pod of an Eviction may be deleted when no budget covers it, when it is
// not running (pending, finished or already being deleted), or when its one budget allows a
// disruption, which is then taken (disruptionsAllowed decremented and the pod recorded in
// disruptedPods with a compare-and-swap on the budget, so two evictions cannot both take
// the last one). Otherwise it returns 429 TooManyRequests with upstream's message, which
// kubectl drain retries.
func (s *Server) checkDisruptionBudget(ctx context.Context, pods *registry.Store, ns, name string, dryRun bool) error {
	cur, err := pods.Storage.Get(ctx, pods.Key(ns, name))
	if err != nil {
		return pods.APIError(err, name)
	}
	pod := cur.(*corev1.Pod)
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodPending {
		return nil
	}
	pdbs, ok := s.stores[pdbGVR]
	if !ok {
		return nil
	}
	list, err := pdbs.Storage.List(ctx, pdbs.Prefix(ns), storage.ListOptions{})
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("eviction of pod %s/%s: list disruption budgets: %w", ns, name, err))
	}
	var matched []*policyv1.PodDisruptionBudget
	for i := range list.(*policyv1.PodDisruptionBudgetList).Items {
		p := &list.(*policyv1.PodDisruptionBudgetList).Items[i]
		if p.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		matched = append(matched, p)
	}
	switch len(matched) {
	case 0:
		return nil
	case 1:
	default:
		return apierrors.NewInternalError(errors.New("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
	}
	pdbName := matched[0].Name
	_, err = pdbs.Storage.GuaranteedUpdate(ctx, pdbs.Key(ns, pdbName), nil, func(obj runtime.Object) (runtime.Object, error) {
		pdb := obj.(*policyv1.PodDisruptionBudget).DeepCopy()
		if !podReady(pod) {
			if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
				return nil, errNoBudgetChange
			}
			if pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
				return nil, errNoBudgetChange
			}
		}
		if err := takeDisruption(pdb, name, time.Now()); err != nil {
			return nil, err
		}
		if dryRun {
			return nil, errNoBudgetChange
		}
		return pdb, nil
	})
	if errors.Is(err, errNoBudgetChange) {
		return nil
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	if err != nil {
		return pdbs.APIError(err, pdbName)
	}
	return nil
}

// errNoBudgetChange ends a budget update that has nothing to write.
var errNoBudgetChange = errors.New("no budget change")

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// takeDisruption is upstream's checkAndDecrement on a copy of the budget.
func takeDisruption(pdb *policyv1.PodDisruptionBudget, podName string, now time.Time) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name)})
		return err
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return apierrors.NewForbidden(pdbGVR.GroupResource(), pdb.Name, errors.New("pdb disruptions allowed is negative"))
	}
	if len(pdb.Status.DisruptedPods) > maxDisruptedPods {
		return apierrors.NewForbidden(pdbGVR.GroupResource(), pdb.Name, errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    policyv1.DisruptionBudgetCause,
			Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)})
		return err
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		for i := range pdb.Status.Conditions {
			c := &pdb.Status.Conditions[i]
			if c.Type == policyv1.DisruptionAllowedCondition && c.Status != metav1.ConditionFalse {
				c.Status, c.Reason, c.Message, c.LastTransitionTime = metav1.ConditionFalse, policyv1.InsufficientPodsReason, "", metav1.NewTime(now)
			}
		}
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[podName] = metav1.NewTime(now)
	return nil
}
