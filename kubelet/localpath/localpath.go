// Package localpath is the kubelet's local-path provisioner, as k3s ships
// rancher/local-path-provisioner, but in the node agent instead of a Deployment with a
// helper pod: a claim of a wasmkube.io/local-path class that the scheduler placed on
// this node (volume.kubernetes.io/selected-node) and that the PV controller handed to
// the provisioner (volume.kubernetes.io/storage-provisioner) gets a directory under
// <root>/storage/ and a local PersistentVolume pinned to the node by nodeAffinity and
// pre-bound to the claim; the PV controller then binds both. A Released volume of ours
// with reclaim Delete loses its directory and its object; Retain keeps both.
//
// The provisioner learns of claims through the pods bound to its node (it may read only
// those claims: the node authorizer) and of its volumes through a watch of the PVs
// labelled wasmkube.io/local-path-node=<node>.
package localpath

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/wasmkube/wasmkube/internal/volumes"
)

// Provisioner provisions and deletes the local-path volumes of one node.
type Provisioner struct {
	client  kubernetes.Interface
	node    string
	rootDir string
	log     *slog.Logger
	queue   workqueue.TypedRateLimitingInterface[string]
}

// New returns the provisioner of node, keeping volumes under rootDir/storage.
func New(client kubernetes.Interface, node, rootDir string, log *slog.Logger) *Provisioner {
	if log == nil {
		log = slog.Default()
	}
	return &Provisioner{client: client, node: node, rootDir: rootDir, log: log.With("component", "local-path-provisioner"),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 10*time.Second))}
}

// Run provisions and reclaims until ctx is done.
func (p *Provisioner) Run(ctx context.Context) {
	defer p.queue.ShutDown()
	pods := informers.NewSharedInformerFactoryWithOptions(p.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", p.node).String()
	}))
	pvs := informers.NewSharedInformerFactoryWithOptions(p.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = volumes.NodeLabel + "=" + p.node
	}))
	onPod := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.DeletionTimestamp != nil {
			return
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				p.queue.Add("pvc/" + pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	onPV := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok {
			p.queue.Add("pv/" + pv.Name)
		}
	}
	_, _ = pods.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onPod, UpdateFunc: func(_, n any) { onPod(n) }})
	_, _ = pvs.Core().V1().PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onPV, UpdateFunc: func(_, n any) { onPV(n) }})
	pods.Start(ctx.Done())
	pvs.Start(ctx.Done())
	defer pods.Shutdown()
	defer pvs.Shutdown()
	go func() { <-ctx.Done(); p.queue.ShutDown() }()
	for {
		key, quit := p.queue.Get()
		if quit {
			return
		}
		requeue, err := p.sync(ctx, key)
		switch {
		case err != nil && ctx.Err() == nil:
			p.log.Warn("local-path", "key", key, "err", err)
			p.queue.AddRateLimited(key)
		case requeue:
			p.queue.AddAfter(key, time.Second) // the claim waits for the PV controller's annotation
			p.queue.Forget(key)
		default:
			p.queue.Forget(key)
		}
		p.queue.Done(key)
	}
}

func (p *Provisioner) sync(ctx context.Context, key string) (bool, error) {
	kind, rest, _ := strings.Cut(key, "/")
	if kind == "pv" {
		return false, p.reclaim(ctx, rest)
	}
	ns, name, _ := strings.Cut(rest, "/")
	pvc, err := p.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return false, nil // the pod is gone (the node authorizer no longer lets us read it)
	}
	if err != nil {
		return false, err
	}
	return p.Provision(ctx, pvc)
}

// Provision makes the volume of pvc if it is this node's to make; requeue is true when
// the claim may become ours shortly (selected here, not yet handed to a provisioner).
func (p *Provisioner) Provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (requeue bool, err error) {
	if pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil || pvc.Annotations[volumes.AnnSelectedNode] != p.node {
		return false, nil
	}
	if pvc.Annotations[volumes.AnnStorageProvisioner] != volumes.Provisioner {
		return pvc.Annotations[volumes.AnnStorageProvisioner] == "", nil
	}
	sc, err := p.client.StorageV1().StorageClasses().Get(ctx, volumes.ClaimClass(pvc), metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("claim %s/%s: storage class %q: %w", pvc.Namespace, pvc.Name, volumes.ClaimClass(pvc), err)
	}
	if sc.Provisioner != volumes.Provisioner {
		return false, nil
	}
	name := volumes.PVName(pvc)
	dir := volumes.Dir(p.rootDir, name, pvc.Namespace, pvc.Name)
	// 0777 as k3s's helper makes them: the pod's user is not known here.
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return false, fmt.Errorf("claim %s/%s: create %s: %w", pvc.Namespace, pvc.Name, dir, err)
	}
	_ = os.Chmod(dir, 0o777)
	pv := volumes.NewLocalPV(pvc, sc, p.node, dir)
	if _, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("claim %s/%s: create volume %s: %w", pvc.Namespace, pvc.Name, name, err)
	}
	p.log.Info("provisioned", "claim", pvc.Namespace+"/"+pvc.Name, "volume", name, "dir", dir)
	return false, nil
}

// reclaim deletes a Released volume of ours whose policy is Delete: first its directory,
// then the object, so a crash in between leaves an object to retry with.
func (p *Provisioner) reclaim(ctx context.Context, name string) error {
	pv, err := p.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Annotations[volumes.AnnProvisionedBy] != volumes.Provisioner || pv.Labels[volumes.NodeLabel] != p.node || pv.DeletionTimestamp != nil {
		return nil
	}
	dir := volumes.HostPath(pv)
	// Only a directory of ours is removed, whatever the object says.
	if rel, err := filepath.Rel(filepath.Join(p.rootDir, "storage"), dir); err != nil || strings.HasPrefix(rel, "..") || rel == "." || strings.Contains(rel, "/") {
		return fmt.Errorf("volume %s: spec.local.path %q is not under %s", name, dir, filepath.Join(p.rootDir, "storage"))
	}
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("volume %s: remove %s: %w", name, dir, err)
	}
	uid := pv.UID
	err = p.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	p.log.Info("deleted", "volume", name, "dir", dir)
	return nil
}
