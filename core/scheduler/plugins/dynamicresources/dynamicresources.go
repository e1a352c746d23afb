// Package dynamicresources is the DynamicResources plugin, the part of upstream's that
// wasmkube can honour without allocating devices: a pod that names ResourceClaims
// (spec.resourceClaims) is scheduled only when every claim exists and is already allocated,
// onto a node the allocations' node selectors admit, and its PreBind reserves the claims
// for the pod (status.reservedFor) as upstream's does. A claim that is not allocated keeps
// the pod pending with a FailedScheduling reason naming it: wasmkube's scheduler has no
// structured-parameters allocator (docs/scheduler.md, "Resource claims"), so the pod would
// otherwise run without its devices.
//
// Claims are read with the client in PreFilter (one GET per claim and cycle), as
// VolumeBinding reads its volumes, because a config swap builds plugins after the
// scheduler's informer factory has started.
package dynamicresources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Name of the plugin (upstream's).
const Name = "DynamicResources"

const stateKey = framework.StateKey(Name)

// Upstream's reasons where wasmkube meets the same case.
const (
	ErrReasonInUse        = "resourceclaim in use"
	ErrReasonNotAvailable = "resourceclaim not available on the node"
)

// DynamicResources implements PreFilter, Filter and PreBind.
type DynamicResources struct {
	client kubernetes.Interface
}

// New is the factory.
func New(_ context.Context, args json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	pl := &DynamicResources{}
	if h != nil {
		pl.client = h.ClientSet()
	}
	return pl, framework.DecodeArgs(Name, args, &struct{}{})
}

// Name implements framework.Plugin.
func (*DynamicResources) Name() string { return Name }

// state is what PreFilter learnt: the pod's allocated claims and their node selectors.
type state struct {
	claims    []*resourcev1.ResourceClaim
	selectors []*nodeaffinity.NodeSelector
}

func (s *state) Clone() framework.StateData { return s }

// ClaimError says why one of a pod's claims keeps it pending; its message is the
// FailedScheduling reason.
type ClaimError struct {
	Pod, Claim string // namespace/name of each
	Reason     string
}

func (e *ClaimError) Error() string { return fmt.Sprintf("resourceclaim %q: %s", e.Claim, e.Reason) }

// ErrNotCreated: a claim from a template has no ResourceClaim yet (upstream's
// resourceclaim.ErrClaimNotFound).
var ErrNotCreated = errors.New("ResourceClaim not created yet")

// ClaimName resolves one entry of spec.resourceClaims to the name of its ResourceClaim, as
// upstream's resourceclaim.Name: the named claim, or for a template the claim recorded in
// status.resourceClaimStatuses (nil name: none was made on purpose, and the entry is
// skipped). mustCheckOwner is true for a claim made from a template.
func ClaimName(pod *v1.Pod, pc *v1.PodResourceClaim) (name *string, mustCheckOwner bool, err error) {
	switch {
	case pc.ResourceClaimName != nil:
		return pc.ResourceClaimName, false, nil
	case pc.ResourceClaimTemplateName != nil:
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name == pc.Name {
				return st.ResourceClaimName, true, nil
			}
		}
		return nil, false, fmt.Errorf(`pod "%s/%s": %w`, pod.Namespace, pod.Name, ErrNotCreated)
	default:
		return nil, false, fmt.Errorf(`pod "%s/%s", spec.resourceClaim %q: neither resourceClaimName nor resourceClaimTemplateName is set`, pod.Namespace, pod.Name, pc.Name)
	}
}

// Judge decides on one claim of pod: nil when the pod may use it, or why not. It is pure.
func Judge(pod *v1.Pod, claim *resourcev1.ResourceClaim, mustCheckOwner bool) *ClaimError {
	bad := func(reason string) *ClaimError {
		return &ClaimError{Pod: pod.Namespace + "/" + pod.Name, Claim: claim.Namespace + "/" + claim.Name, Reason: reason}
	}
	if claim.DeletionTimestamp != nil {
		return bad("is being deleted")
	}
	if mustCheckOwner && !ownedBy(claim, pod) {
		return bad("was not created for the pod")
	}
	if claim.Status.Allocation == nil {
		return bad("is not allocated, and wasmkube's scheduler does not allocate devices (dynamic resource allocation has no allocator here)")
	}
	if !reservedFor(claim, pod) && len(claim.Status.ReservedFor) >= resourcev1.ResourceClaimReservedForMaxSize {
		return bad(ErrReasonInUse)
	}
	return nil
}

func ownedBy(claim *resourcev1.ResourceClaim, pod *v1.Pod) bool {
	for _, o := range claim.OwnerReferences {
		if o.UID == pod.UID && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

func reservedFor(claim *resourcev1.ResourceClaim, pod *v1.Pod) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.Resource == "pods" && r.UID == pod.UID {
			return true
		}
	}
	return false
}

// PreFilter implements framework.PreFilterPlugin; pods without claims Skip.
func (pl *DynamicResources) PreFilter(ctx context.Context, cs *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	if pl.client == nil {
		return nil, framework.AsStatus(fmt.Errorf("%s: no API client", Name))
	}
	st := &state{}
	for i := range pod.Spec.ResourceClaims {
		name, mustCheckOwner, err := ClaimName(pod, &pod.Spec.ResourceClaims[i])
		if err != nil {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
		}
		if name == nil {
			continue
		}
		claim, err := pl.client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("resourceclaim %q not found", pod.Namespace+"/"+*name))
		}
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		if e := Judge(pod, claim, mustCheckOwner); e != nil {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, e.Error())
		}
		var sel *nodeaffinity.NodeSelector
		if ns := claim.Status.Allocation.NodeSelector; ns != nil {
			if sel, err = nodeaffinity.NewNodeSelector(ns); err != nil {
				return nil, framework.AsStatus(fmt.Errorf("resourceclaim %s/%s: allocation node selector: %w", claim.Namespace, claim.Name, err))
			}
		}
		st.claims = append(st.claims, claim)
		st.selectors = append(st.selectors, sel)
	}
	if len(st.claims) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	cs.Write(stateKey, st)
	return nil, nil
}

// Filter implements framework.FilterPlugin: every allocation must admit the node.
func (pl *DynamicResources) Filter(_ context.Context, cs *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) *framework.Status {
	d, ok := cs.Read(stateKey)
	if !ok {
		return nil // PreFilter skipped: no claims
	}
	for _, sel := range d.(*state).selectors {
		if sel != nil && !sel.Match(node.Node()) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNotAvailable)
		}
	}
	return nil
}

// PreBind implements framework.PreBindPlugin: each claim not yet reserved for the pod gets
// the pod in status.reservedFor (upstream's reservation), so that no other component
// deallocates it while the pod runs.
func (pl *DynamicResources) PreBind(ctx context.Context, cs *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	d, ok := cs.Read(stateKey)
	if !ok {
		return nil
	}
	for _, claim := range d.(*state).claims {
		if reservedFor(claim, pod) {
			continue
		}
		c := claim.DeepCopy()
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID})
		if _, err := pl.client.ResourceV1().ResourceClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			return framework.AsStatus(fmt.Errorf("reserve resourceclaim %s/%s for pod %s on %s: %w", c.Namespace, c.Name, pod.Name, nodeName, err))
		}
	}
	return nil
}

// SignPod implements framework.SignPlugin: a pod with claims is unsignable, as upstream's
// ("pods with dra resource claims are not signable": a reservation for one pod changes the
// claim the next one reads); other pods are not this plugin's concern and sign nothing.
func (*DynamicResources) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	if len(pod.Spec.ResourceClaims) > 0 {
		return nil, framework.Unsignable("pods with dra resource claims are not signable")
	}
	return nil, nil
}
