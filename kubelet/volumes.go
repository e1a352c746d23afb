package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/internal/volumes"
)

// claimSource reads a pod's PersistentVolumeClaims and their volumes; apiObjects is one.
type claimSource interface {
	Claim(ctx context.Context, ns, name string) (*v1.PersistentVolumeClaim, error)
	Volume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// Claim implements claimSource.
func (o apiObjects) Claim(ctx context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	return o.c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

// Volume implements claimSource.
func (o apiObjects) Volume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	return o.c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

// claimPath is the host directory of a persistentVolumeClaim volume: the bound volume's
// local (or hostPath) directory on this node, bind-mounted into the containers as is. As
// upstream's volume manager (desired_state_of_world_populator), it refuses a claim being
// deleted and a volume whose claimRef is another claim (a stale binding); a claim not bound
// yet (its volume is being provisioned on this node) is an error the pod worker retries. A
// local-path volume of another node, or one whose directory is gone, is refused with its
// name rather than left to the runtime's bind mount to fail on. node is this kubelet's
// name; empty means the pod's spec.nodeName.
func claimPath(ctx context.Context, pod *v1.Pod, src *v1.PersistentVolumeClaimVolumeSource, objs Objects, node string) (string, error) {
	if src.ClaimName == "" {
		return "", fmt.Errorf("claimName is empty")
	}
	cs, ok := objs.(claimSource)
	if !ok {
		return "", fmt.Errorf("no API access to read claim %q", src.ClaimName)
	}
	if node == "" {
		node = pod.Spec.NodeName
	}
	pvc, err := cs.Claim(ctx, pod.Namespace, src.ClaimName)
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: %w", src.ClaimName, err)
	}
	if pvc.DeletionTimestamp != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q is being deleted", src.ClaimName)
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != v1.ClaimBound {
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound yet (phase %s)", src.ClaimName, pvc.Status.Phase)
	}
	pv, err := cs.Volume(ctx, pvc.Spec.VolumeName)
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q of claim %q: %w", pvc.Spec.VolumeName, src.ClaimName, err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != pvc.Namespace || ref.Name != pvc.Name || (ref.UID != "" && ref.UID != pvc.UID) {
		return "", fmt.Errorf("persistentvolume %q of claim %q: spec.claimRef does not name this claim", pv.Name, src.ClaimName)
	}
	dir := volumes.HostPath(pv)
	if dir == "" {
		return "", fmt.Errorf("persistentvolume %q of claim %q: wasmkube's kubelet mounts only local and hostPath volumes", pv.Name, src.ClaimName)
	}
	if node != "" {
		if n := pv.Labels[volumes.NodeLabel]; n != "" && n != node {
			return "", fmt.Errorf("persistentvolume %q of claim %q is on node %s, not %s", pv.Name, src.ClaimName, n, node)
		}
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("persistentvolume %q of claim %q: path %q is not absolute", pv.Name, src.ClaimName, dir)
	}
	fi, err := os.Stat(dir)
	if err == nil && pv.Spec.Local != nil && !fi.IsDir() {
		err = fmt.Errorf("not a directory") // a filesystem-mode local volume is one
	}
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q of claim %q: %s: %w", pv.Name, src.ClaimName, dir, err)
	}
	return dir, nil
}

// claimReadOnly is whether the pod's volume name is a persistentVolumeClaim volume with
// readOnly set: upstream mounts it read-only in every container, whatever the volumeMount
// says.
func claimReadOnly(pod *v1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly
		}
	}
	return false
}
