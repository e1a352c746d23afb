// Package namespace finishes the deletion of a namespace: when the API server has marked it
// Terminating (deletionTimestamp set, the `kubernetes` finalizer in spec.finalizers), the
// controller deletes every namespaced object in it, of every resource the API serves, waits
// until they are all gone (pods take their grace period), then removes the finalizer
// through the namespace's finalize subresource so the API server can delete it.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs and metrics.
const Name = "namespace"

// Resource is one namespaced resource the controller empties.
type Resource struct {
	GVR              schema.GroupVersionResource
	DeleteCollection bool
}

// Deletable picks, from discovery's preferred resources, the namespaced top-level resources
// that can be listed and deleted.
func Deletable(lists []*metav1.APIResourceList) []Resource {
	var out []Resource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !r.Namespaced || strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			out = append(out, Resource{GVR: gv.WithResource(r.Name), DeleteCollection: slices.Contains(r.Verbs, "deletecollection")})
		}
	}
	return out
}

// Controller is the namespace controller.
type Controller struct {
	client    kubernetes.Interface
	dyn       dynamic.Interface
	disco     discovery.DiscoveryInterface
	nsLister  corelisters.NamespaceLister
	synced    cache.InformerSynced
	queue     worker.Queue
	log       *slog.Logger
	pollEvery time.Duration
}

// New wires the controller to the factory's Namespace informer.
func New(client kubernetes.Interface, dyn dynamic.Interface, f informers.SharedInformerFactory, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	inf := f.Core().V1().Namespaces()
	c := &Controller{client: client, dyn: dyn, disco: client.Discovery(), nsLister: inf.Lister(),
		synced: inf.Informer().HasSynced, queue: worker.NewQueue(Name), log: log.With("controller", Name),
		pollEvery: time.Second}
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			c.queue.Add(ns.Name)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles terminating namespaces with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.nsLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	lists, err := c.disco.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return fmt.Errorf("discover resources to delete in namespace %s: %w", name, err)
	}
	// A group that failed discovery may hold objects we cannot see: do not finalize then.
	discoveryFailed := err != nil
	remaining := 0
	var errs []error
	for _, r := range Deletable(lists) {
		n, err := c.empty(ctx, name, r)
		if err != nil {
			errs = append(errs, err)
		}
		remaining += n
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if remaining > 0 || discoveryFailed {
		// Pods and objects with finalizers take time to go: look again shortly.
		return worker.RequeueAfter(c.pollEvery)
	}
	cp := ns.DeepCopy()
	cp.Spec.Finalizers = slices.DeleteFunc(cp.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	if _, err := c.client.CoreV1().Namespaces().Finalize(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	c.log.Info("namespace emptied and finalized", "namespace", name)
	return nil
}

// empty deletes the objects of one resource in ns and returns how many still exist.
func (c *Controller) empty(ctx context.Context, ns string, r Resource) (int, error) {
	ri := c.dyn.Resource(r.GVR).Namespace(ns)
	list, err := ri.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("list %s in namespace %s: %w", r.GVR.Resource, ns, err)
	}
	if len(list.Items) == 0 {
		return 0, nil
	}
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	if r.DeleteCollection {
		if err := ri.DeleteCollection(ctx, opts, metav1.ListOptions{}); err == nil {
			return len(list.Items), nil
		}
	}
	var errs []error
	for _, it := range list.Items {
		if it.GetDeletionTimestamp() != nil {
			continue
		}
		if err := ri.Delete(ctx, it.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s/%s: %w", r.GVR.Resource, ns, it.GetName(), err))
		}
	}
	return len(list.Items), errors.Join(errs...)
}
