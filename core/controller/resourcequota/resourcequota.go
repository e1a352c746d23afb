// Package resourcequota is the ResourceQuota controller: it keeps each quota's
// status.hard (= spec.hard) and status.used, recomputed from the namespace's pods and
// object counts, as upstream's resource quota controller does. The API server's
// ResourceQuota admission charges creates to status.used at once; this controller is
// what releases usage when objects go away, and corrects any charge for an object whose
// write then failed.
package resourcequota

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/worker"
	"github.com/wasmkube/wasmkube/internal/quota"
)

// Name of the controller.
const Name = "resourcequota"

// Controller is the ResourceQuota controller.
type Controller struct {
	client      kubernetes.Interface
	quotaLister corelisters.ResourceQuotaLister
	podLister   corelisters.PodLister
	synced      []cache.InformerSynced
	queue       worker.Queue
	log         *slog.Logger
}

// New wires the controller to the factory's ResourceQuota and Pod informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	qInf, podInf := f.Core().V1().ResourceQuotas(), f.Core().V1().Pods()
	c := &Controller{client: client, quotaLister: qInf.Lister(), podLister: podInf.Lister(),
		synced: []cache.InformerSynced{qInf.Informer().HasSynced, podInf.Informer().HasSynced},
		queue:  worker.NewQueue(Name), log: log.With("controller", Name)}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := qInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) },
	}); err != nil {
		return nil, err
	}
	podEvent := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			qs, _ := c.quotaLister.ResourceQuotas(p.Namespace).List(labels.Everything())
			for _, q := range qs {
				c.queue.Add(q.Namespace + "/" + q.Name)
			}
		}
	}
	if _, err := podInf.Informer().AddEventHandler(worker.OnEvery(podEvent)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles quotas with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	q, err := c.quotaLister.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	used, err := c.usage(ctx, ns, q.Spec.Hard)
	if err != nil {
		return err
	}
	status := corev1.ResourceQuotaStatus{Hard: q.Spec.Hard.DeepCopy(), Used: quota.Mask(used, q.Spec.Hard)}
	if apiequality.Semantic.DeepEqual(q.Status, status) {
		return nil
	}
	up := q.DeepCopy()
	up.Status = status
	_, err = c.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, up, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		c.queue.Add(key) // an admission charge landed in between: count again
		return nil
	}
	return err
}

// usage counts pods from the cache and, only for the counts hard names, the other
// standard objects with a list.
func (c *Controller) usage(ctx context.Context, ns string, hard corev1.ResourceList) (corev1.ResourceList, error) {
	pods, err := c.podLister.Pods(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	used := corev1.ResourceList{}
	for _, p := range pods {
		used = quota.Add(used, quota.PodUsage(p))
	}
	for gr, std := range quota.ObjectCountNames {
		if gr.Resource == "pods" {
			continue
		}
		_, a := hard[std]
		_, b := hard[quota.CountName(gr)]
		if !a && !b {
			continue
		}
		n, err := c.count(ctx, ns, gr.Resource)
		if err != nil {
			return nil, err
		}
		for range n {
			used = quota.Add(used, quota.ObjectUsage(gr))
		}
	}
	return used, nil
}

func (c *Controller) count(ctx context.Context, ns, res string) (int, error) {
	core := c.client.CoreV1()
	opts := metav1.ListOptions{}
	switch res {
	case "services":
		l, err := core.Services(ns).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	case "configmaps":
		l, err := core.ConfigMaps(ns).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	case "secrets":
		l, err := core.Secrets(ns).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	case "replicationcontrollers":
		l, err := core.ReplicationControllers(ns).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	case "resourcequotas":
		l, err := core.ResourceQuotas(ns).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	case "persistentvolumeclaims":
		l, err := core.PersistentVolumeClaims(ns).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	return 0, nil
}
