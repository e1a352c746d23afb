package wasmpolicy

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// Where a policy's revisions are kept: ControllerRevisions in kube-system (a WasmPolicy is
// cluster-scoped; a ControllerRevision is namespaced), labelled with the policy's uid and
// owned by it, so they go with it.
const (
	RevisionNamespace     = "kube-system"
	PolicyUIDLabel        = "policy.wasmkube.io/policy-uid"
	PolicyAnnotation      = "policy.wasmkube.io/policy"
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
	// HistoryLimit revisions are kept per policy (as a Deployment's default
	// revisionHistoryLimit); the oldest go first, never the current one.
	HistoryLimit = 10
)

// RevisionData is a spec as a revision stores it: its JSON, without spec.revision.
func RevisionData(s *policyv1alpha1.WasmPolicySpec) ([]byte, error) {
	c := s.DeepCopy()
	c.Revision = nil
	return json.Marshal(c)
}

// RevisionSpec decodes a revision's spec.
func RevisionSpec(cr *appsv1.ControllerRevision) (*policyv1alpha1.WasmPolicySpec, error) {
	s := &policyv1alpha1.WasmPolicySpec{}
	if err := json.Unmarshal(cr.Data.Raw, s); err != nil {
		return nil, fmt.Errorf("revision %d of the policy (ControllerRevision %s/%s): %w", cr.Revision, cr.Namespace, cr.Name, err)
	}
	return s, nil
}

func sameData(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// RevisionName is the name of the revision of policy whose data is data.
func RevisionName(policy string, data []byte) string {
	h := fnv.New32a()
	_, _ = h.Write(data)
	return report.Name("wasmpolicy", policy, fmt.Sprintf("%08x", h.Sum32()))
}

// RevisionPlan is what keeping a policy's history needs: the revision its spec is (to
// create, when New, or to renumber, when Renumber), and the revisions to delete.
type RevisionPlan struct {
	Current  *appsv1.ControllerRevision
	New      bool
	Renumber bool
	Prune    []*appsv1.ControllerRevision
}

// PlanRevisions decides, from the policy's revisions, which one its spec (data) is: an
// existing one with the same data (renumbered as the newest if it is not, as `kubectl
// rollout undo` renumbers a Deployment's), or a new one numbered after the newest. The
// oldest beyond HistoryLimit are pruned.
func PlanRevisions(p *policyv1alpha1.WasmPolicy, existing []*appsv1.ControllerRevision, data []byte) RevisionPlan {
	revs := append([]*appsv1.ControllerRevision(nil), existing...)
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	var max int64
	if n := len(revs); n > 0 {
		max = revs[n-1].Revision
	}
	var plan RevisionPlan
	for _, r := range revs {
		if sameData(r.Data.Raw, data) {
			plan.Current = r.DeepCopy()
			if r.Revision != max {
				plan.Current.Revision, plan.Renumber = max+1, true
			}
		}
	}
	if plan.Current == nil {
		plan.New = true
		plan.Current = &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: RevisionName(p.Name, data), Namespace: RevisionNamespace,
				Labels:      map[string]string{PolicyUIDLabel: string(p.UID)},
				Annotations: map[string]string{PolicyAnnotation: p.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicy",
					Name: p.Name, UID: p.UID}}},
			Data: runtime.RawExtension{Raw: data}, Revision: max + 1,
		}
		if c := p.Annotations[ChangeCauseAnnotation]; c != "" {
			plan.Current.Annotations[ChangeCauseAnnotation] = c
		}
	}
	// Keep the newest HistoryLimit, counting the current one.
	var others []*appsv1.ControllerRevision
	for _, r := range revs {
		if r.Name != plan.Current.Name {
			others = append(others, r)
		}
	}
	if extra := len(others) + 1 - HistoryLimit; extra > 0 {
		plan.Prune = others[:extra]
	}
	return plan
}

// FindRevision is the revision numbered n, or nil.
func FindRevision(revs []*appsv1.ControllerRevision, n int64) *appsv1.ControllerRevision {
	for _, r := range revs {
		if r.Revision == n {
			return r
		}
	}
	return nil
}

// SortRevisions sorts revisions oldest first (in place) and returns them.
func SortRevisions(revs []*appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	return revs
}

// RevisionNotFoundError: no kept revision has the number asked for.
type RevisionNotFoundError struct {
	Revision int64
	Kept     []int64
}

func (e *RevisionNotFoundError) Error() string {
	if e.Revision == 0 {
		return fmt.Sprintf("no revision before the current one is kept (kept: %v)", e.Kept)
	}
	return fmt.Sprintf("no revision %d is kept (kept: %v; the last %d are)", e.Revision, e.Kept, HistoryLimit)
}

// RollbackTarget is the revision a rollback goes to: to, or with to 0 the newest one
// before current (the status.revision of the policy).
func RollbackTarget(revs []*appsv1.ControllerRevision, current, to int64) (*appsv1.ControllerRevision, error) {
	var kept []int64
	var prev *appsv1.ControllerRevision
	for _, r := range revs {
		kept = append(kept, r.Revision)
		if r.Revision < current && (prev == nil || r.Revision > prev.Revision) {
			prev = r
		}
	}
	if to == 0 {
		if prev == nil {
			return nil, &RevisionNotFoundError{Kept: kept}
		}
		return prev, nil
	}
	if r := FindRevision(revs, to); r != nil {
		return r, nil
	}
	return nil, &RevisionNotFoundError{Revision: to, Kept: kept}
}
