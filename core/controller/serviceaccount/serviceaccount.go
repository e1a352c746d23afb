// Package serviceaccount is two upstream controllers in one: the service account
// controller (every namespace has a ServiceAccount "default", recreated if deleted) and
// the root CA publisher (every namespace has the ConfigMap kube-root-ca.crt with the
// cluster CA as ca.crt, which pods' kube-api-access volumes project).
package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name of the controller in logs and metrics.
const Name = "serviceaccount"

const (
	defaultAccount = "default"
	rootCAName     = "kube-root-ca.crt"
	rootCAKey      = "ca.crt"
)

// Controller keeps each namespace's default account and root CA ConfigMap.
type Controller struct {
	client kubernetes.Interface
	caPEM  string
	ns     corelisters.NamespaceLister
	sa     corelisters.ServiceAccountLister
	cm     corelisters.ConfigMapLister
	synced []cache.InformerSynced
	queue  worker.Queue
	log    *slog.Logger
}

// New returns the controller; caPEM is the cluster CA published in kube-root-ca.crt
// (empty: no ConfigMap is published).
func New(client kubernetes.Interface, f informers.SharedInformerFactory, caPEM []byte, log *slog.Logger) (*Controller, error) {
	nsi, sai, cmi := f.Core().V1().Namespaces(), f.Core().V1().ServiceAccounts(), f.Core().V1().ConfigMaps()
	c := &Controller{client: client, caPEM: string(caPEM), ns: nsi.Lister(), sa: sai.Lister(), cm: cmi.Lister(),
		queue: worker.NewQueue(Name), log: log.With("controller", Name)}
	c.synced = []cache.InformerSynced{nsi.Informer().HasSynced, sai.Informer().HasSynced, cmi.Informer().HasSynced}
	if _, err := nsi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.queue.Add(obj.(*corev1.Namespace).Name) },
		UpdateFunc: func(_, obj any) { c.queue.Add(obj.(*corev1.Namespace).Name) },
	}); err != nil {
		return nil, err
	}
	// A deleted account or ConfigMap, or an edited ConfigMap, is put back.
	byNamespace := func(obj any) {
		if m, err := metaOf(obj); err == nil {
			c.queue.Add(m.GetNamespace())
		}
	}
	if _, err := sai.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: byNamespace}); err != nil {
		return nil, err
	}
	if _, err := cmi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) { byNamespace(obj) }, DeleteFunc: byNamespace}); err != nil {
		return nil, err
	}
	return c, nil
}

func metaOf(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

// Run reconciles until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.reconcile, c.log)
}

func (c *Controller) reconcile(ctx context.Context, ns string) error {
	n, err := c.ns.Get(ns)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.Status.Phase == corev1.NamespaceTerminating || n.DeletionTimestamp != nil {
		return nil // creating in a terminating namespace is refused anyway
	}
	if _, err := c.sa.ServiceAccounts(ns).Get(defaultAccount); apierrors.IsNotFound(err) {
		_, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: defaultAccount}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create service account %s/default: %w", ns, err)
		}
	}
	if c.caPEM == "" {
		return nil
	}
	cm, err := c.cm.ConfigMaps(ns).Get(rootCAName)
	switch {
	case apierrors.IsNotFound(err):
		_, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rootCAName,
			Annotations: map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
			Data: map[string]string{rootCAKey: c.caPEM}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create configmap %s/%s: %w", ns, rootCAName, err)
		}
	case err != nil:
		return err
	case cm.Data[rootCAKey] != c.caPEM:
		next := cm.DeepCopy()
		if next.Data == nil {
			next.Data = map[string]string{}
		}
		next.Data[rootCAKey] = c.caPEM
		if _, err := c.client.CoreV1().ConfigMaps(ns).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update configmap %s/%s: %w", ns, rootCAName, err)
		}
	}
	return nil
}
