// Package endpointslice keeps the EndpointSlices (discovery.k8s.io/v1) of Services, as
// upstream's two controllers do: the EndpointSlice controller writes the slices of a
// Service with a selector from the pods it selects (at most 100 endpoints a slice, labels
// kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by), and the mirroring
// controller copies the Endpoints of a selector-less Service into slices. The node proxy
// and the cluster DNS read slices (kubelet/proxy, kubelet/dns). Decisions are the pure
// PodGroups, EndpointsGroups and Reconcile (plan.go); this file does the API calls.
package endpointslice

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/endpoints"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs and metrics.
const Name = "endpointslice"

// Controller is the EndpointSlice controller.
type Controller struct {
	client     kubernetes.Interface
	svcLister  corelisters.ServiceLister
	podLister  corelisters.PodLister
	nodeLister corelisters.NodeLister
	slices     discoverylisters.EndpointSliceLister
	synced     []cache.InformerSynced
	queue      worker.Queue
	log        *slog.Logger
	tracker    *tracker
	max        int
}

// New wires the controller to the factory's Service, Pod, Node and EndpointSlice informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	svcInf, podInf, nodeInf := f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Nodes()
	esInf := f.Discovery().V1().EndpointSlices()
	c := &Controller{client: client, svcLister: svcInf.Lister(), podLister: podInf.Lister(), nodeLister: nodeInf.Lister(),
		slices: esInf.Lister(),
		synced: []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced,
			nodeInf.Informer().HasSynced, esInf.Informer().HasSynced},
		queue: worker.NewQueue(Name), log: log.With("controller", Name), tracker: newTracker(), max: DefaultMaxPerSlice}
	if _, err := svcInf.Informer().AddEventHandler(worker.EnqueueAll(c.queue)); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.podChanged,
		UpdateFunc: func(o, n any) {
			c.podChanged(n)
			if !equality.Semantic.DeepEqual(o.(*corev1.Pod).Labels, n.(*corev1.Pod).Labels) {
				c.podChanged(o)
			}
		},
		DeleteFunc: c.podChanged,
	}); err != nil {
		return nil, err
	}
	// A slice of ours changed or deleted by someone else is put back.
	if _, err := esInf.Informer().AddEventHandler(sliceHandler(c.queue, ManagedBy)); err != nil {
		return nil, err
	}
	return c, nil
}

// sliceHandler enqueues the Service of a slice managed by managedBy.
func sliceHandler(q worker.Queue, managedBy string) cache.ResourceEventHandlerFuncs {
	enqueue := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		es, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || es.Labels[discoveryv1.LabelManagedBy] != managedBy || es.Labels[discoveryv1.LabelServiceName] == "" {
			return
		}
		q.Add(es.Namespace + "/" + es.Labels[discoveryv1.LabelServiceName])
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue}
}

func (c *Controller) podChanged(obj any) {
	for _, key := range endpoints.SelectingServices(c.svcLister, obj) {
		c.queue.Add(key)
	}
}

// Run reconciles slices with workers workers until ctx is done.
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
	existing, err := managedSlices(c.slices, ns, name, ManagedBy)
	if err != nil {
		return err
	}
	if !c.tracker.seen(key, existing, c.slices) {
		return worker.RequeueAfter(100 * time.Millisecond) // our last writes are not in the cache yet
	}
	svc, err := c.svcLister.Services(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && (svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName)) {
		// Gone (the garbage collector would delete them too), selector-less (the
		// mirroring controller's) or an ExternalName: no slices of ours.
		return apply(ctx, c.client, c.tracker, key, Changes{Delete: existing})
	}
	if err != nil {
		return err
	}
	pods, err := c.podLister.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	zones := map[string]string{}
	if nodes, err := c.nodeLister.List(labels.Everything()); err == nil {
		for _, n := range nodes {
			zones[n.Name] = n.Labels[corev1.LabelTopologyZone]
		}
	}
	ch := Reconcile(Owner{Service: svc, ManagedBy: ManagedBy, MaxPerSlice: c.max}, PodGroups(svc, pods, zones), existing)
	return apply(ctx, c.client, c.tracker, key, ch)
}

// managedSlices are the slices of Service ns/name that managedBy keeps.
func managedSlices(l discoverylisters.EndpointSliceLister, ns, name, managedBy string) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: managedBy})
	return l.EndpointSlices(ns).List(sel)
}

// apply makes the API calls of ch and notes their results in t, so the next sync of key
// waits for the cache to show them instead of acting on a stale view (creating a slice
// twice).
func apply(ctx context.Context, client kubernetes.Interface, t *tracker, key string, ch Changes) error {
	if ch.Empty() {
		return nil
	}
	var errs []error
	for _, es := range ch.Delete {
		err := client.DiscoveryV1().EndpointSlices(es.Namespace).Delete(ctx, es.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &es.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete endpointslice %s/%s: %w", es.Namespace, es.Name, err))
			continue
		}
		t.expect(key, es.Name, "")
	}
	for _, es := range ch.Update {
		out, err := client.DiscoveryV1().EndpointSlices(es.Namespace).Update(ctx, es, metav1.UpdateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("update endpointslice %s/%s: %w", es.Namespace, es.Name, err))
			continue
		}
		t.expect(key, out.Name, out.ResourceVersion)
	}
	for _, es := range ch.Create {
		out, err := client.DiscoveryV1().EndpointSlices(es.Namespace).Create(ctx, es, metav1.CreateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("create endpointslice for service %s: %w", key, err))
			continue
		}
		t.expect(key, out.Name, out.ResourceVersion)
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// tracker remembers, per Service, the resourceVersion of each slice this controller last
// wrote ("" for one it deleted), as upstream's EndpointSliceTracker.
// A record older than trackerTTL is dropped: a slice someone else deleted before the
// cache saw it must not hold its Service back forever.
type tracker struct {
	mu    sync.Mutex
	m     map[string]map[string]string
	since map[string]time.Time
}

const trackerTTL = 5 * time.Second

func newTracker() *tracker {
	return &tracker{m: map[string]map[string]string{}, since: map[string]time.Time{}}
}

func (t *tracker) expect(key, slice, rv string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[key] == nil {
		t.m[key] = map[string]string{}
	}
	t.m[key][slice] = rv
	t.since[key] = time.Now()
}

// seen reports whether the cache holds every write made for key; once it does, the
// record is dropped.
func (t *tracker) seen(key string, existing []*discoveryv1.EndpointSlice, l discoverylisters.EndpointSliceLister) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	want := t.m[key]
	if len(want) == 0 || time.Since(t.since[key]) > trackerTTL {
		delete(t.m, key)
		delete(t.since, key)
		return true
	}
	ns, _, _ := cache.SplitMetaNamespaceKey(key)
	for name, rv := range want {
		es, err := l.EndpointSlices(ns).Get(name)
		switch {
		case rv == "" && err == nil:
			return false // deleted, still cached
		case rv == "":
		case err != nil:
			return false // made, not cached yet
		case olderThan(es.ResourceVersion, rv):
			return false
		}
	}
	delete(t.m, key)
	delete(t.since, key)
	return true
}

// olderThan compares resourceVersions as the etcd revisions they are.
func olderThan(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}
