// Package persistentvolume is the PV controller, after upstream's
// pkg/controller/volume/persistentvolume and pvcprotection/pvprotection: it binds
// claims to volumes (both sides: the claim's spec.volumeName and the volume's
// spec.claimRef, then Bound on both), hands claims that need a new volume to their
// class's provisioner (the volume.kubernetes.io/storage-provisioner annotation; for
// WaitForFirstConsumer classes only once the scheduler has set selected-node), releases
// a volume whose claim is gone (Retain keeps it Released; Delete is the provisioner's to
// carry out, as upstream's external provisioners do), gives unclassed claims the default
// class (retroactive default StorageClass assignment), and keeps the protection
// finalizers: kubernetes.io/pvc-protection while a pod uses the claim,
// kubernetes.io/pv-protection while a claim is bound to the volume.
//
// Decisions read the informers' caches; the two that would lose data if the cache lagged
// (a volume's claim is gone; no pod uses a claim any more) are checked once more with a
// live read, as upstream does.
package persistentvolume

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/worker"
	"github.com/wasmkube/wasmkube/internal/volumes"
)

// Name is the controller's name in logs, metrics and events.
const Name = "persistentvolume"

// Controller is the PV controller.
type Controller struct {
	client    kubernetes.Interface
	pvLister  corelisters.PersistentVolumeLister
	pvcLister corelisters.PersistentVolumeClaimLister
	scLister  storagelisters.StorageClassLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced
	queue     worker.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
}

// New wires the controller to the factory's PV, PVC, StorageClass and Pod informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	pvInf, pvcInf := f.Core().V1().PersistentVolumes(), f.Core().V1().PersistentVolumeClaims()
	scInf, podInf := f.Storage().V1().StorageClasses(), f.Core().V1().Pods()
	c := &Controller{
		client: client, pvLister: pvInf.Lister(), pvcLister: pvcInf.Lister(), scLister: scInf.Lister(), podLister: podInf.Lister(),
		synced: []cache.InformerSynced{pvInf.Informer().HasSynced, pvcInf.Informer().HasSynced, scInf.Informer().HasSynced, podInf.Informer().HasSynced},
		queue:  worker.NewQueue(Name), recorder: recorder, log: log.With("controller", Name),
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		on  func(any)
	}{
		{pvInf.Informer(), c.onVolume},
		{pvcInf.Informer(), c.onClaim},
		{podInf.Informer(), c.onPod},
		{scInf.Informer(), c.onClass},
	}
	for _, h := range handlers {
		on := h.on
		if _, err := h.inf.AddEventHandler(worker.OnEvery(on)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run reconciles with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func (c *Controller) onVolume(obj any) {
	pv, ok := unwrap(obj).(*corev1.PersistentVolume)
	if !ok {
		return
	}
	c.queue.Add("pv/" + pv.Name)
	if r := pv.Spec.ClaimRef; r != nil {
		c.queue.Add("pvc/" + r.Namespace + "/" + r.Name)
	}
}

func (c *Controller) onClaim(obj any) {
	pvc, ok := unwrap(obj).(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	c.queue.Add("pvc/" + pvc.Namespace + "/" + pvc.Name)
	if pvc.Spec.VolumeName != "" {
		c.queue.Add("pv/" + pvc.Spec.VolumeName)
	}
	// A claim that went away releases the volumes that point to it.
	if pvs, err := c.pvLister.List(labels.Everything()); err == nil {
		for _, pv := range pvs {
			if r := pv.Spec.ClaimRef; r != nil && r.Namespace == pvc.Namespace && r.Name == pvc.Name {
				c.queue.Add("pv/" + pv.Name)
			}
		}
	}
}

func (c *Controller) onPod(obj any) {
	p, ok := unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	for _, name := range ClaimsOf(p) {
		c.queue.Add("pvc/" + p.Namespace + "/" + name)
	}
}

func (c *Controller) onClass(obj any) {
	sc, ok := unwrap(obj).(*storagev1.StorageClass)
	if !ok || !volumes.IsDefaultClass(sc) {
		return
	}
	// A new default class is given to the claims that have none.
	pvcs, err := c.pvcLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pvc := range pvcs {
		if pvc.Spec.StorageClassName == nil {
			c.queue.Add("pvc/" + pvc.Namespace + "/" + pvc.Name)
		}
	}
}

// ClaimsOf lists the claims a pod's volumes name.
func ClaimsOf(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

func (c *Controller) sync(ctx context.Context, key string) error {
	kind, rest, _ := strings.Cut(key, "/")
	if kind == "pv" {
		return c.syncVolume(ctx, rest)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(rest)
	if err != nil {
		return nil
	}
	return c.syncClaim(ctx, ns, name)
}

// defaultClass is the newest default StorageClass, as upstream picks one when several are
// marked default.
func (c *Controller) defaultClass() *storagev1.StorageClass {
	scs, err := c.scLister.List(labels.Everything())
	if err != nil {
		return nil
	}
	var best *storagev1.StorageClass
	for _, sc := range scs {
		if volumes.IsDefaultClass(sc) && (best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time)) {
			best = sc
		}
	}
	return best
}

func (c *Controller) syncClaim(ctx context.Context, ns, name string) error {
	pvc, err := c.pvcLister.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pvc.DeletionTimestamp != nil {
		return c.releaseProtection(ctx, pvc)
	}
	if !slices.Contains(pvc.Finalizers, volumes.PVCProtectionFinalizer) {
		next := pvc.DeepCopy()
		next.Finalizers = append(next.Finalizers, volumes.PVCProtectionFinalizer)
		return c.updateClaim(ctx, next)
	}
	if pvc.Spec.StorageClassName == nil && pvc.Spec.VolumeName == "" && pvc.Annotations[corev1.BetaStorageClassAnnotation] == "" {
		if sc := c.defaultClass(); sc != nil {
			next := pvc.DeepCopy()
			next.Spec.StorageClassName = &sc.Name
			return c.updateClaim(ctx, next)
		}
	}
	if pvc.Spec.VolumeName != "" {
		return c.syncBoundClaim(ctx, pvc)
	}
	// Unbound: a volume already meant for it (pre-bound by a provisioner or an admin), or
	// for an Immediate class an available one that fits, smallest first.
	var sc *storagev1.StorageClass
	if cls := volumes.ClaimClass(pvc); cls != "" {
		sc, _ = c.scLister.Get(cls)
	}
	pvs, err := c.pvLister.List(labels.Everything())
	if err != nil {
		return err
	}
	var candidates []*corev1.PersistentVolume
	for _, pv := range pvs {
		if !volumes.Fits(pv, pvc) {
			continue
		}
		if r := pv.Spec.ClaimRef; r != nil {
			return c.bind(ctx, pv, pvc) // meant for this claim
		}
		if pv.Status.Phase == corev1.VolumeAvailable {
			candidates = append(candidates, pv)
		}
	}
	if !volumes.IsWaitForFirstConsumer(sc) && len(candidates) > 0 {
		sort.Slice(candidates, func(i, j int) bool {
			a, b := candidates[i].Spec.Capacity[corev1.ResourceStorage], candidates[j].Spec.Capacity[corev1.ResourceStorage]
			return a.Cmp(b) < 0
		})
		return c.bind(ctx, candidates[0], pvc)
	}
	if sc == nil || sc.Provisioner == "" || sc.Provisioner == "kubernetes.io/no-provisioner" {
		return c.claimStatus(ctx, pvc, corev1.ClaimPending)
	}
	if volumes.IsWaitForFirstConsumer(sc) && pvc.Annotations[volumes.AnnSelectedNode] == "" {
		return c.claimStatus(ctx, pvc, corev1.ClaimPending) // the scheduler picks the node first
	}
	if pvc.Annotations[volumes.AnnStorageProvisioner] != sc.Provisioner {
		next := pvc.DeepCopy()
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[volumes.AnnStorageProvisioner] = sc.Provisioner
		next.Annotations[volumes.AnnBetaStorageProvisioner] = sc.Provisioner
		c.recorder.Eventf(pvc, corev1.EventTypeNormal, "ExternalProvisioning",
			"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator.", sc.Provisioner)
		return c.updateClaim(ctx, next)
	}
	return c.claimStatus(ctx, pvc, corev1.ClaimPending)
}

// syncBoundClaim completes a bind whose claim side is done: the volume must point back,
// then the claim is Bound with the volume's capacity; a claim whose volume is gone is Lost.
func (c *Controller) syncBoundClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	pv, err := c.pvLister.Get(pvc.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		if pvc.Status.Phase == corev1.ClaimBound {
			c.recorder.Eventf(pvc, corev1.EventTypeWarning, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
			return c.claimStatus(ctx, pvc, corev1.ClaimLost)
		}
		return c.claimStatus(ctx, pvc, corev1.ClaimPending)
	}
	if err != nil {
		return err
	}
	if r := pv.Spec.ClaimRef; r == nil || (r.Namespace == pvc.Namespace && r.Name == pvc.Name && (r.UID == "" || r.UID == pvc.UID)) {
		return c.bind(ctx, pv, pvc)
	}
	c.recorder.Eventf(pvc, corev1.EventTypeWarning, "FailedBinding", "volume %q already bound to a different claim.", pv.Name)
	return c.claimStatus(ctx, pvc, corev1.ClaimPending)
}

// bind makes pv and pvc point at each other and marks both Bound; each step is one
// write, so a crash between them is finished by the next sync.
func (c *Controller) bind(ctx context.Context, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) error {
	if r := pv.Spec.ClaimRef; r == nil || r.UID != pvc.UID {
		next := pv.DeepCopy()
		next.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion}
		if r == nil {
			metav1.SetMetaDataAnnotation(&next.ObjectMeta, volumes.AnnBoundByController, "yes")
		}
		updated, err := c.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return conflictOK(fmt.Errorf("bind volume %s to claim %s/%s: %w", pv.Name, pvc.Namespace, pvc.Name, err))
		}
		pv = updated
	}
	if pv.Status.Phase != corev1.VolumeBound {
		next := pv.DeepCopy()
		next.Status.Phase, next.Status.Reason, next.Status.Message = corev1.VolumeBound, "", ""
		updated, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return conflictOK(fmt.Errorf("update status of volume %s: %w", pv.Name, err))
		}
		pv = updated
	}
	if pvc.Spec.VolumeName != pv.Name || pvc.Annotations[volumes.AnnBindCompleted] != "yes" {
		next := pvc.DeepCopy()
		next.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, volumes.AnnBindCompleted, "yes")
		updated, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return conflictOK(fmt.Errorf("bind claim %s/%s to volume %s: %w", pvc.Namespace, pvc.Name, pv.Name, err))
		}
		pvc = updated
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		next := pvc.DeepCopy()
		next.Status.Phase = corev1.ClaimBound
		next.Status.AccessModes = pv.Spec.AccessModes
		next.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: pv.Spec.Capacity[corev1.ResourceStorage]}
		if _, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return conflictOK(fmt.Errorf("update status of claim %s/%s: %w", pvc.Namespace, pvc.Name, err))
		}
		c.log.Debug("bound", "claim", pvc.Namespace+"/"+pvc.Name, "volume", pv.Name)
	}
	return nil
}

// conflictOK drops a conflict or not-found: the informer brings the newer object and the
// key is synced again.
func conflictOK(err error) error {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (c *Controller) claimStatus(ctx context.Context, pvc *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase) error {
	if pvc.Status.Phase == phase {
		return nil
	}
	next := pvc.DeepCopy()
	next.Status.Phase = phase
	if phase != corev1.ClaimBound {
		next.Status.Capacity, next.Status.AccessModes = nil, nil
	}
	_, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	return conflictOK(err)
}

func (c *Controller) updateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	_, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{})
	return conflictOK(err)
}

// releaseProtection removes pvc-protection from a deleted claim once no pod that may
// still run uses it (checked in the cache, then live).
func (c *Controller) releaseProtection(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if !slices.Contains(pvc.Finalizers, volumes.PVCProtectionFinalizer) {
		return nil
	}
	inUse := func(pods []*corev1.Pod) bool {
		for _, p := range pods {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			if slices.Contains(ClaimsOf(p), pvc.Name) {
				return true
			}
		}
		return false
	}
	cached, err := c.podLister.Pods(pvc.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	if inUse(cached) {
		return nil // a pod event brings the claim back
	}
	live, err := c.client.CoreV1().Pods(pvc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods := make([]*corev1.Pod, len(live.Items))
	for i := range live.Items {
		pods[i] = &live.Items[i]
	}
	if inUse(pods) {
		return nil
	}
	next := pvc.DeepCopy()
	next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == volumes.PVCProtectionFinalizer })
	return c.updateClaim(ctx, next)
}

func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, err := c.pvLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.DeletionTimestamp == nil && !slices.Contains(pv.Finalizers, volumes.PVProtectionFinalizer) {
		next := pv.DeepCopy()
		next.Finalizers = append(next.Finalizers, volumes.PVProtectionFinalizer)
		_, err := c.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{})
		return conflictOK(err)
	}
	r := pv.Spec.ClaimRef
	if r == nil {
		if pv.DeletionTimestamp != nil {
			return c.dropPVProtection(ctx, pv)
		}
		return c.volumeStatus(ctx, pv, corev1.VolumeAvailable, "")
	}
	pvc, err := c.pvcLister.PersistentVolumeClaims(r.Namespace).Get(r.Name)
	if apierrors.IsNotFound(err) {
		// The cache may lag a claim created a moment ago: ask the API before releasing.
		pvc, err = c.client.CoreV1().PersistentVolumeClaims(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	claimGone := err != nil || (r.UID != "" && pvc.UID != r.UID)
	if !claimGone {
		if pv.DeletionTimestamp != nil && pvc.Spec.VolumeName != pv.Name {
			return c.dropPVProtection(ctx, pv)
		}
		if pvc.Spec.VolumeName == "" || pvc.Spec.VolumeName == pv.Name {
			if pvc.Spec.VolumeName == pv.Name && pv.Status.Phase != corev1.VolumeBound {
				return c.volumeStatus(ctx, pv, corev1.VolumeBound, "")
			}
			return nil // the claim's sync binds it
		}
		// The claim is bound elsewhere: a controller-made pre-bind is undone.
		if pv.Annotations[volumes.AnnBoundByController] == "yes" {
			next := pv.DeepCopy()
			next.Spec.ClaimRef = nil
			_, err := c.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{})
			return conflictOK(err)
		}
		return nil
	}
	if pv.DeletionTimestamp != nil {
		return c.dropPVProtection(ctx, pv)
	}
	if r.UID == "" {
		return c.volumeStatus(ctx, pv, corev1.VolumeAvailable, "") // pre-bound by an admin to a claim still to come
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		if pv.Annotations[volumes.AnnProvisionedBy] == "" {
			if pv.Status.Phase != corev1.VolumeFailed {
				c.recorder.Eventf(pv, corev1.EventTypeWarning, "VolumeFailedDelete", "no provisioner deletes this volume: it was not dynamically provisioned")
			}
			return c.volumeStatus(ctx, pv, corev1.VolumeFailed, "no provisioner deletes this volume: it was not dynamically provisioned")
		}
		// Released: the provisioner named in pv.kubernetes.io/provisioned-by deletes the
		// data and the object (kubelet/localpath.go for wasmkube.io/local-path).
		return c.volumeStatus(ctx, pv, corev1.VolumeReleased, "")
	default: // Retain (and Recycle, which upstream deprecated): the data stays for an admin
		return c.volumeStatus(ctx, pv, corev1.VolumeReleased, "")
	}
}

func (c *Controller) dropPVProtection(ctx context.Context, pv *corev1.PersistentVolume) error {
	if !slices.Contains(pv.Finalizers, volumes.PVProtectionFinalizer) {
		return nil
	}
	next := pv.DeepCopy()
	next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == volumes.PVProtectionFinalizer })
	_, err := c.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{})
	return conflictOK(err)
}

func (c *Controller) volumeStatus(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, msg string) error {
	if pv.Status.Phase == phase && pv.Status.Message == msg {
		return nil
	}
	next := pv.DeepCopy()
	next.Status.Phase, next.Status.Message = phase, msg
	next.Status.Reason = ""
	if phase == corev1.VolumeFailed {
		next.Status.Reason = "VolumeFailedDelete"
	}
	_, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, next, metav1.UpdateOptions{})
	return conflictOK(err)
}
