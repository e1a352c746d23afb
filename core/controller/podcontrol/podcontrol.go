// Package podcontrol is the informer wiring that every controller owning pods shares
// (ReplicaSet, Job, DaemonSet, StatefulSet): the pod-by-controller-uid index, claiming
// (adopting matching orphans, releasing owned pods that stopped matching, as upstream's
// PodControllerRefManager), and the pod event handler that maps a pod event to its
// owner's queue key through the controller reference, records what the owner's
// expectations were waiting for, and queues the owners that may adopt an orphan.
//
// The decisions themselves (Decide, the adopt/release patches) are pure and live in
// podstate; this package is the thin I/O edge around them.
package podcontrol

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/expectations"
	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// ControllerUIDIndex indexes objects by the uid of their controller.
const ControllerUIDIndex = "controllerUID"

// AddControllerUIDIndex adds the by-controller-uid index to an informer, once: every
// controller sharing the factory's pod informer calls it, and the first one wins.
func AddControllerUIDIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[ControllerUIDIndex]; ok {
		return nil
	}
	err := inf.AddIndexers(cache.Indexers{ControllerUIDIndex: func(obj any) ([]string, error) {
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return nil, nil
	}})
	if err != nil && inf.HasSynced() {
		return err
	}
	if _, ok := inf.GetIndexer().GetIndexers()[ControllerUIDIndex]; ok {
		return nil
	}
	return err
}

func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("object %T has no metadata", obj)
	}
	return m, nil
}

// Pods is a controller's view of the pods it may own: the shared pod informer's lister
// and controller-uid index, and the client that patches ownerReferences.
type Pods struct {
	client kubernetes.Interface
	lister corelisters.PodLister
	index  cache.Indexer
	// Synced reports whether the pod informer has synced.
	Synced cache.InformerSynced
}

// NewPods wires to the factory's pod informer and adds the controller-uid index.
func NewPods(client kubernetes.Interface, inf coreinformers.PodInformer) (*Pods, error) {
	if err := AddControllerUIDIndex(inf.Informer()); err != nil {
		return nil, err
	}
	return &Pods{client: client, lister: inf.Lister(), index: inf.Informer().GetIndexer(), Synced: inf.Informer().HasSynced}, nil
}

// Lister is the pod informer's lister.
func (p *Pods) Lister() corelisters.PodLister { return p.lister }

// Owned returns the cached pods whose controller has uid, whatever their labels.
func (p *Pods) Owned(uid types.UID) ([]*corev1.Pod, error) {
	objs, err := p.index.ByIndex(ControllerUIDIndex, string(uid))
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*corev1.Pod))
	}
	return out, nil
}

// Claim returns the pods owner controls after adopting the orphans in its namespace that
// match sel (and adoptable, when it is not nil: a StatefulSet adopts only pods named as
// its members) and releasing the owned pods that no longer match. ref is the controller
// reference the owner sets on what it creates (podstate.ControllerRef).
func (p *Pods) Claim(ctx context.Context, owner metav1.Object, ref metav1.OwnerReference, sel labels.Selector,
	adoptable func(*corev1.Pod) bool) ([]*corev1.Pod, error) {
	candidates, err := p.Owned(owner.GetUID())
	if err != nil {
		return nil, err
	}
	seen := make(map[types.UID]bool, len(candidates))
	for _, pod := range candidates {
		seen[pod.UID] = true
	}
	matching, err := p.lister.Pods(owner.GetNamespace()).List(sel)
	if err != nil {
		return nil, err
	}
	for _, pod := range matching {
		if !seen[pod.UID] && (adoptable == nil || adoptable(pod)) {
			candidates = append(candidates, pod)
		}
	}
	return podstate.ClaimAll(ctx, candidates, owner, ref, sel, "pod", func(ctx context.Context, ns, name string, patch []byte) error {
		_, err := p.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// Events maps events of owned objects (pods, or a StatefulSet's ControllerRevisions) to
// the queue key of the owner of kind Kind, as upstream's controllers do:
//   - an object with a controller reference of Kind queues that owner, if the cache holds
//     it with the reference's uid (the old owner too when the reference changed);
//   - an added object is a creation the owner's Expectations waited for; one being deleted
//     (deletionTimestamp set, or gone) is a deletion, counted once per uid;
//   - an orphan that was added, changed labels or lost its controller queues every owner
//     whose selector matches it, so one of them adopts it.
//
// T is the owner's type (*appsv1.ReplicaSet, *batchv1.Job, ...).
type Events[T metav1.Object] struct {
	Kind  string
	Queue worker.Queue
	// Expectations, if not nil, are told of observed creations and deletions.
	Expectations *expectations.Expectations
	// Get returns the cached owner (a lister's Get).
	Get func(namespace, name string) (T, error)
	// List returns the cached owners of a namespace that may adopt an orphan, and
	// Selector their selectors; with List nil orphans are not looked at.
	List     func(namespace string) ([]T, error)
	Selector func(T) *metav1.LabelSelector
	// Gone, if not nil, is called for an object whose controller of Kind is not in the
	// cache (the Job controller releases its finalizer).
	Gone func(obj metav1.Object)
	// Updated, if not nil, is called after an update queued the object's owner (the
	// ReplicaSet controller looks again once a pod that became ready is available).
	Updated func(key string, owner T, old, cur metav1.Object)
}

// Handler is the informer event handler.
func (e *Events[T]) Handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: e.add, UpdateFunc: e.update, DeleteFunc: e.deleted}
}

// owner returns the queue key and the owner named by ref, if ref is a controller of Kind
// that the cache holds with ref's uid.
func (e *Events[T]) owner(ns string, ref *metav1.OwnerReference) (string, T, bool) {
	var zero T
	if ref == nil || ref.Kind != e.Kind {
		return "", zero, false
	}
	o, err := e.Get(ns, ref.Name)
	if err != nil || o.GetUID() != ref.UID {
		return "", zero, false
	}
	return ns + "/" + o.GetName(), o, true
}

// resolve returns the owner of obj's controller reference of Kind; it calls Gone when the
// reference is of Kind but the owner is not cached.
func (e *Events[T]) resolve(m metav1.Object, ref *metav1.OwnerReference) (string, T, bool) {
	key, o, ok := e.owner(m.GetNamespace(), ref)
	if !ok && ref != nil && ref.Kind == e.Kind && e.Gone != nil {
		e.Gone(m)
	}
	return key, o, ok
}

func (e *Events[T]) add(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	if m.GetDeletionTimestamp() != nil {
		e.deleted(obj)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		if key, _, ok := e.resolve(m, ref); ok {
			if e.Expectations != nil {
				e.Expectations.CreationObserved(key)
			}
			e.Queue.Add(key)
		}
		return
	}
	e.enqueueMatching(m)
}

func (e *Events[T]) update(oldObj, newObj any) {
	old, err := metaOf(oldObj)
	if err != nil {
		return
	}
	cur, err := metaOf(newObj)
	if err != nil || old.GetResourceVersion() == cur.GetResourceVersion() {
		return
	}
	if cur.GetDeletionTimestamp() != nil {
		e.deleted(newObj)
		return
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if key, _, ok := e.owner(old.GetNamespace(), oldRef); ok {
			e.Queue.Add(key)
		}
	}
	if curRef != nil {
		if key, o, ok := e.resolve(cur, curRef); ok {
			e.Queue.Add(key)
			if e.Updated != nil {
				e.Updated(key, o, old, cur)
			}
		}
		return
	}
	if oldRef != nil || !equality.Semantic.DeepEqual(old.GetLabels(), cur.GetLabels()) {
		e.enqueueMatching(cur)
	}
}

func (e *Events[T]) deleted(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil {
		return
	}
	if key, _, ok := e.resolve(m, ref); ok {
		if e.Expectations != nil {
			e.Expectations.DeletionObserved(key, string(m.GetUID()))
		}
		e.Queue.Add(key)
	}
}

// enqueueMatching queues every owner whose selector matches the orphan m.
func (e *Events[T]) enqueueMatching(m metav1.Object) {
	if e.List == nil {
		return
	}
	owners, err := e.List(m.GetNamespace())
	if err != nil {
		return
	}
	set := labels.Set(m.GetLabels())
	for _, o := range owners {
		sel, err := metav1.LabelSelectorAsSelector(e.Selector(o))
		if err != nil || sel.Empty() || !sel.Matches(set) {
			continue
		}
		e.Queue.Add(m.GetNamespace() + "/" + o.GetName())
	}
}

// OwnerHandler queues an owner on every event of its own informer; on deletion it also
// drops the owner's expectations (if exp is not nil) and calls forget (if not nil) with
// its key, so nothing recorded for an owner outlives it.
func OwnerHandler(q worker.Queue, exp *expectations.Expectations, forget func(key string)) cache.ResourceEventHandlerFuncs {
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n any) { enqueue(n) },
		DeleteFunc: func(obj any) {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				return
			}
			if exp != nil {
				exp.Forget(key)
			}
			if forget != nil {
				forget(key)
			}
			q.Add(key)
		},
	}
}

// Batches remembers, per owner key, how many creations the owner's last pass made without
// a failure, so that the next pass's slow start (replicaset.SlowStart) begins at that
// batch size instead of at 1. Upstream starts every pass at 1; a Job that replaces ten
// finished pods a pass then pays four sequential rounds of API calls (1, 2, 4, 3) each
// time, which on a loaded API server was most of a pass. A failure starts the owner at 1
// again, so a create that starts failing (quota, admission) still fails once, not n times,
// from the pass after the first failure on. The zero value is ready to use.
type Batches struct {
	mu sync.Mutex
	m  map[string]int
}

// Initial is the first batch size for n creations of key (at least 1, at most n).
func (b *Batches) Initial(key string, n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(1, min(n, b.m[key]))
}

// Done records a pass's creations: created succeeded, err is the pass's failure if any.
func (b *Batches) Done(key string, created int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]int{}
	}
	if err != nil || created <= 0 {
		delete(b.m, key)
		return
	}
	b.m[key] = max(b.m[key], created)
}

// Forget drops what is known of key (its owner is gone).
func (b *Batches) Forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
}

// DeletePods deletes pods in parallel for their owner (key, owner): each delete guarded
// by the pod's UID, the deletions expected before they are sent and observed at once for
// one that did not happen, a SuccessfulDelete or FailedDelete event per pod, as upstream's
// controllers do. A pod already gone or replaced (NotFound, Conflict) is not an error.
func DeletePods(ctx context.Context, client kubernetes.Interface, rec record.EventRecorder, exp *expectations.Expectations,
	key string, owner runtime.Object, pods []*corev1.Pod) []error {
	if len(pods) == 0 {
		return nil
	}
	uids := make([]string, len(pods))
	for i, pod := range pods {
		uids[i] = string(pod.UID)
	}
	exp.ExpectDeletions(key, uids)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			if err == nil {
				rec.Eventf(owner, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", pod.Name)
				return
			}
			exp.DeletionObserved(key, string(pod.UID))
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return
			}
			rec.Eventf(owner, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
			mu.Lock()
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err))
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errs
}
