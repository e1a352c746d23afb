// Package volumes holds what the API server, the PV controller, the scheduler's
// VolumeBinding plugin and the kubelet's local-path provisioner agree on: the names of
// the default StorageClass and its provisioner, upstream's annotations and finalizers,
// and the pure decisions (does a volume fit a claim, may a volume be used on a node) that
// each of them needs. docs/volumes.md describes the whole flow.
package volumes

import (
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

const (
	// Provisioner is the local-path provisioner's name, in StorageClass.provisioner.
	Provisioner = "wasmkube.io/local-path"
	// DefaultClass is the StorageClass the API server creates at start.
	DefaultClass = "local-path"

	// AnnDefaultClass marks the default StorageClass (upstream's).
	AnnDefaultClass = "storageclass.kubernetes.io/is-default-class"
	// AnnSelectedNode is set on a WaitForFirstConsumer claim by the scheduler: the node
	// its first pod goes to, where it is to be provisioned (upstream's).
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnStorageProvisioner names the provisioner expected to provision a claim; the PV
	// controller sets it from the claim's class (upstream's, and its beta twin).
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// AnnProvisionedBy is set on a PV by the provisioner that made it (upstream's).
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// AnnBindCompleted and AnnBoundByController are the PV controller's bookkeeping on
	// claims and volumes (upstream's).
	AnnBindCompleted     = "pv.kubernetes.io/bind-completed"
	AnnBoundByController = "pv.kubernetes.io/bound-by-controller"

	// PVCProtectionFinalizer keeps a claim while a pod uses it; PVProtectionFinalizer keeps
	// a volume while a claim is bound to it (upstream's).
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"

	// NodeLabel is on every local-path PV: the node whose directory it is. It lets a
	// kubelet watch only its own volumes and NodeRestriction check what a node creates.
	NodeLabel = "wasmkube.io/local-path-node"
	// HostnameLabel is what a local-path PV's nodeAffinity selects on.
	HostnameLabel = corev1.LabelHostname
)

// DefaultStorageClass is the class the API server creates at start: the local-path
// provisioner, WaitForFirstConsumer (the scheduler picks the node first), reclaim Delete.
func DefaultStorageClass() *storagev1.StorageClass {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	del := corev1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: DefaultClass, Annotations: map[string]string{AnnDefaultClass: "true"}},
		Provisioner:       Provisioner,
		ReclaimPolicy:     &del,
		VolumeBindingMode: &wffc,
	}
}

// IsDefaultClass reports whether sc is marked default.
func IsDefaultClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[AnnDefaultClass] == "true" || sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true"
}

// ClaimClass is the class a claim asks for ("" for none).
func ClaimClass(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return pvc.Annotations[corev1.BetaStorageClassAnnotation]
}

// IsWaitForFirstConsumer reports whether sc delays binding until a pod is scheduled.
func IsWaitForFirstConsumer(sc *storagev1.StorageClass) bool {
	return sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// NodeMatches reports whether pv may be used on node: its nodeAffinity, if any, selects
// the node.
func NodeMatches(pv *corev1.PersistentVolume, node *corev1.Node) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return true
	}
	ok, err := nodeaffinity.NewLazyErrorNodeSelector(pv.Spec.NodeAffinity.Required).Match(node)
	return err == nil && ok
}

// Fits reports whether pv can satisfy pvc (before binding): same class, every requested
// access mode, enough capacity, the claim's selector, and not claimed by another claim.
func Fits(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) bool {
	if r := pv.Spec.ClaimRef; r != nil && !(r.Namespace == pvc.Namespace && r.Name == pvc.Name && (r.UID == "" || r.UID == pvc.UID)) {
		return false
	}
	if pv.Spec.StorageClassName != ClaimClass(pvc) || pv.DeletionTimestamp != nil {
		return false
	}
	if pv.Status.Phase != "" && pv.Status.Phase != corev1.VolumeAvailable && pv.Status.Phase != corev1.VolumePending && pv.Spec.ClaimRef == nil {
		return false
	}
	mode := func(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
		if m == nil {
			return corev1.PersistentVolumeFilesystem
		}
		return *m
	}
	if mode(pv.Spec.VolumeMode) != mode(pvc.Spec.VolumeMode) {
		return false
	}
	for _, want := range pvc.Spec.AccessModes {
		has := false
		for _, m := range pv.Spec.AccessModes {
			has = has || m == want
		}
		if !has {
			return false
		}
	}
	req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	if capacity.Cmp(req) < 0 {
		return false
	}
	if pvc.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pvc.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pv.Labels)) {
			return false
		}
	}
	return true
}

// PVName is the name the provisioner gives the volume of claim pvc (upstream's
// "pvc-<uid>").
func PVName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

// Dir is the directory of a local-path volume under a kubelet's root dir, as k3s's
// provisioner names them: <pv>_<namespace>_<claim>.
func Dir(rootDir string, pvName, ns, claim string) string {
	return filepath.Join(rootDir, "storage", fmt.Sprintf("%s_%s_%s", pvName, ns, claim))
}

// NewLocalPV is the PersistentVolume the local-path provisioner creates for pvc on node:
// a local volume at dir, pinned to the node by nodeAffinity, pre-bound to the claim, with
// the class's reclaim policy.
func NewLocalPV(pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, node, dir string) *corev1.PersistentVolume {
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc != nil && sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	mode := corev1.PersistentVolumeFilesystem
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        PVName(pvc),
			Labels:      map[string]string{NodeLabel: node},
			Annotations: map[string]string{AnnProvisionedBy: Provisioner},
			Finalizers:  []string{PVProtectionFinalizer},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              ClaimClass(pvc),
			VolumeMode:                    &mode,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: HostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
}

// HostPath is the directory on the node of a PV the kubelet can mount (local or
// hostPath), or "".
func HostPath(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	}
	return ""
}
