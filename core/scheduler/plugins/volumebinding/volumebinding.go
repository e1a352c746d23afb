// Package volumebinding is the VolumeBinding plugin, after upstream's: a pod whose
// PersistentVolumeClaims are bound fits only nodes its volumes' nodeAffinity selects (a
// local-path volume lives on one node); a claim of a WaitForFirstConsumer class that is
// still unbound fits any node (the local-path provisioner makes a volume wherever the pod
// goes), and in PreBind the chosen node is written on the claim as
// volume.kubernetes.io/selected-node, which starts provisioning there; an unbound claim
// of an Immediate class, or a missing claim, keeps the pod pending.
//
// Unlike upstream's, PreBind does not wait for the claim to be bound: the pod is bound at
// once and its kubelet waits for the volume before starting containers (the provisioner
// runs in that same kubelet). Claims, volumes and classes are read with the client in
// PreFilter (one GET each per pod and cycle) rather than from informers, because a
// config swap builds plugins after the scheduler's informer factory has started.
package volumebinding

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/internal/volumes"
)

// Name of the plugin.
const Name = "VolumeBinding"

// Upstream's reasons.
const (
	ErrReasonNodeConflict  = "node(s) had volume node affinity conflict"
	ErrReasonUnboundClaims = "pod has unbound immediate PersistentVolumeClaims"
	ErrReasonBindConflict  = "node(s) didn't find available persistent volumes to bind"
	stateKey               = framework.StateKey(Name)
)

// VolumeBinding implements PreFilter, Filter and PreBind.
type VolumeBinding struct {
	client kubernetes.Interface
}

// New is the factory.
func New(_ context.Context, args json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	pl := &VolumeBinding{}
	if h != nil {
		pl.client = h.ClientSet()
	}
	return pl, framework.DecodeArgs(Name, args, &struct{}{})
}

// Name implements framework.Plugin.
func (*VolumeBinding) Name() string { return Name }

// state is what PreFilter learnt: the bound volumes (their node affinity is checked per
// node) and the WaitForFirstConsumer claims to annotate in PreBind.
type state struct {
	bound   []*v1.PersistentVolume
	delayed []*v1.PersistentVolumeClaim
}

func (s *state) Clone() framework.StateData { return s }

// PreFilter implements framework.PreFilterPlugin; pods without claims Skip.
func (pl *VolumeBinding) PreFilter(ctx context.Context, cs *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	var claims []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
		}
	}
	if len(claims) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	if pl.client == nil {
		return nil, framework.AsStatus(fmt.Errorf("%s: no API client", Name))
	}
	st := &state{}
	for _, name := range claims {
		pvc, err := pl.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		}
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		if pvc.DeletionTimestamp != nil {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if pvc.Spec.VolumeName != "" {
			pv, err := pl.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("pvc(s) bound to non-existent pv(s): %s", pvc.Spec.VolumeName))
			}
			if err != nil {
				return nil, framework.AsStatus(err)
			}
			st.bound = append(st.bound, pv)
			continue
		}
		var sc *storagev1.StorageClass
		if cls := volumes.ClaimClass(pvc); cls != "" {
			sc, err = pl.client.StorageV1().StorageClasses().Get(ctx, cls, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, framework.AsStatus(err)
			}
		} else if pvc.Spec.StorageClassName == nil {
			// The PV controller is about to give it the default class: judge it by that one
			// (a claim created just before its pod is seen here before that write).
			list, err := pl.client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, framework.AsStatus(err)
			}
			for i := range list.Items {
				if c := &list.Items[i]; volumes.IsDefaultClass(c) && (sc == nil || c.CreationTimestamp.After(sc.CreationTimestamp.Time)) {
					sc = c
				}
			}
		}
		if !volumes.IsWaitForFirstConsumer(sc) {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnboundClaims)
		}
		st.delayed = append(st.delayed, pvc)
	}
	cs.Write(stateKey, st)
	return nil, nil
}

// Filter implements framework.FilterPlugin.
func (pl *VolumeBinding) Filter(_ context.Context, cs *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) *framework.Status {
	d, ok := cs.Read(stateKey)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: PreFilter state missing", Name))
	}
	st := d.(*state)
	for _, pv := range st.bound {
		if !volumes.NodeMatches(pv, node.Node()) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeConflict)
		}
	}
	for _, pvc := range st.delayed {
		// A claim the scheduler already placed (an earlier pod, or a bind that failed after
		// PreBind) is provisioned on that node only.
		if n := pvc.Annotations[volumes.AnnSelectedNode]; n != "" && n != node.Node().Name {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonBindConflict)
		}
	}
	return nil
}

// PreBind implements framework.PreBindPlugin: the WaitForFirstConsumer claims get the
// chosen node.
func (pl *VolumeBinding) PreBind(ctx context.Context, cs *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	d, ok := cs.Read(stateKey)
	if !ok {
		return nil // PreFilter skipped: no claims
	}
	for _, pvc := range d.(*state).delayed {
		if pvc.Annotations[volumes.AnnSelectedNode] == nodeName {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{volumes.AnnSelectedNode: nodeName}}})
		if _, err := pl.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return framework.AsStatus(fmt.Errorf("select node %s for claim %s/%s: %w", nodeName, pvc.Namespace, pvc.Name, err))
		}
	}
	return nil
}

// SignPod implements framework.SignPlugin. A pod with PersistentVolumeClaims is
// unsignable: binding a claim for one pod changes which nodes the next pod's claims fit.
// Other volumes do not concern this plugin.
func (*VolumeBinding) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return nil, framework.Unsignable("pods with PersistentVolumeClaims are not signable")
		}
	}
	return nil, nil
}
