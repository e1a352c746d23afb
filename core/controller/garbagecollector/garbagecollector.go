// Package garbagecollector deletes objects whose owners are gone, following
// ownerReferences across every resource the API serves, with the three propagation
// policies of upstream: background (the owner goes at once; the collector then deletes its
// dependents), foreground (the API server keeps the owner, Terminating with the
// foregroundDeletion finalizer, until the collector has deleted every dependent that blocks
// it) and orphan (the collector strips the owner from its dependents, then drops the orphan
// finalizer).
//
// The graph is built from dynamic informers, so any resource with list and watch takes
// part. An owner missing from the graph is looked up live before a dependent is deleted:
// informers of different resources sync at different times, and a dependent must never be
// deleted because its owner's informer is merely late.
package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs and metrics.
const Name = "garbagecollector"

// ignored resources are never owners or dependents worth watching (high churn, no owners),
// as upstream's garbage collector ignores them. Leases are watched: a kubelet's node Lease is
// owned by its Node.
var ignored = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// Collector is the garbage collector.
type Collector struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	graph  *graph
	queue  worker.Queue
	synced []cache.InformerSynced
	log    *slog.Logger
	gvrs   []schema.GroupVersionResource
}

// Watchable picks, from discovery's preferred resources, those the collector watches:
// listable, watchable, deletable and patchable top-level resources, minus ignored ones.
func Watchable(lists []*metav1.APIResourceList) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			ok := true
			for _, v := range []string{"list", "watch", "delete", "patch"} {
				ok = ok && slices.Contains(r.Verbs, v)
			}
			if ok && !ignored[gv.WithResource(r.Name).GroupResource()] {
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	return out
}

// New discovers the served resources and builds dynamic informers for them on f. Start f
// after New and before Run.
func New(dyn dynamic.Interface, disco discovery.DiscoveryInterface, f dynamicinformer.DynamicSharedInformerFactory, log *slog.Logger) (*Collector, error) {
	if log == nil {
		log = slog.Default()
	}
	lists, err := disco.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("garbage collector: discover resources: %w", err)
	}
	c := &Collector{
		dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
		graph: newGraph(), queue: worker.NewQueue(Name), log: log.With("controller", Name),
	}
	for _, gvr := range Watchable(lists) {
		gvr := gvr
		inf := f.ForResource(gvr).Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.upsert(gvr, obj) },
			UpdateFunc: func(_, n any) { c.upsert(gvr, n) },
			DeleteFunc: c.deleted,
		}); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, inf.HasSynced)
		c.gvrs = append(c.gvrs, gvr)
	}
	return c, nil
}

// Resources lists what the collector watches.
func (c *Collector) Resources() []schema.GroupVersionResource { return c.gvrs }

func toObject(gvr schema.GroupVersionResource, obj any) (*object, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false
	}
	return &object{
		gvr: gvr, namespace: u.GetNamespace(), name: u.GetName(), uid: u.GetUID(),
		owners: u.GetOwnerReferences(), deleting: u.GetDeletionTimestamp() != nil,
		finalizers: u.GetFinalizers(), resourceVersion: u.GetResourceVersion(),
	}, true
}

func (c *Collector) upsert(gvr schema.GroupVersionResource, obj any) {
	o, ok := toObject(gvr, obj)
	if !ok {
		return
	}
	c.graph.upsert(o)
	if len(o.owners) > 0 || (o.deleting && (o.has(FinalizerOrphan) || o.has(FinalizerForeground))) {
		c.queue.Add(string(o.uid))
	}
}

func (c *Collector) deleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	o, deps := c.graph.remove(u.GetUID())
	for _, d := range deps {
		c.queue.Add(string(d))
	}
	if o == nil {
		return
	}
	// An owner in foreground deletion may have been waiting for this one.
	for _, r := range o.owners {
		if owner := c.graph.get(r.UID); owner != nil && owner.waitingForDependents() {
			c.queue.Add(string(r.UID))
		}
	}
}

// Run processes the graph with workers workers until ctx is done.
func (c *Collector) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func (c *Collector) sync(ctx context.Context, key string) error {
	o := c.graph.get(types.UID(key))
	if o == nil {
		return nil
	}
	if o.deleting {
		switch {
		case o.has(FinalizerOrphan):
			return c.orphan(ctx, o)
		case o.has(FinalizerForeground):
			return c.foreground(ctx, o)
		}
		return nil
	}
	if len(o.owners) == 0 {
		return nil
	}
	states := map[types.UID]ownerState{}
	for _, r := range o.owners {
		s, err := c.ownerState(ctx, o, r)
		if err != nil {
			return err
		}
		states[r.UID] = s
	}
	act := Decide(o, states, len(c.graph.dependentsOf(o.uid)) > 0)
	if len(act.RemoveOwners) > 0 || len(act.Unblock) > 0 {
		return c.patchOwners(ctx, o, act.RemoveOwners, act.Unblock)
	}
	if act.Delete == "" {
		return nil
	}
	// The graph may be behind the API: an owner that was just orphaned (its reference
	// stripped from this object) then looks gone here. Decide on the object as it is now,
	// as upstream's attemptToDeleteItem does, and delete only that version of it (upstream
	// checks the uid only): a conflict means it changed since, and the update event that
	// brings the change queues it again.
	live, err := c.dyn.Resource(o.gvr).Namespace(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get %s %s: %w", o.gvr.Resource, path(o), err)
	case live.GetUID() != o.uid:
		return nil
	case !sameOwners(live.GetOwnerReferences(), o.owners):
		return nil // its update is on the way and queues it again
	}
	policy := act.Delete
	rv := live.GetResourceVersion()
	err = c.dyn.Resource(o.gvr).Namespace(o.namespace).Delete(ctx, o.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &o.uid, ResourceVersion: &rv}, PropagationPolicy: &policy,
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s: %w", o.gvr.Resource, path(o), err)
	}
	c.log.Debug("deleted dependent of gone owners", "resource", o.gvr.Resource, "object", path(o), "propagation", policy)
	return nil
}

// sameOwners reports whether two owner reference lists name the same owners.
func sameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UID != b[i].UID {
			return false
		}
	}
	return true
}

func path(o *object) string {
	if o.namespace == "" {
		return o.name
	}
	return o.namespace + "/" + o.name
}

// ownerState classifies one owner, from the graph or, if it is not there, from the API.
func (c *Collector) ownerState(ctx context.Context, o *object, r metav1.OwnerReference) (ownerState, error) {
	if owner := c.graph.get(r.UID); owner != nil {
		if owner.waitingForDependents() {
			return ownerWaiting, nil
		}
		return ownerSolid, nil
	}
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return ownerDangling, nil // a reference nobody can resolve never becomes valid
	}
	m, err := c.mapper.RESTMapping(gv.WithKind(r.Kind).GroupKind(), gv.Version)
	if err != nil {
		c.mapper.Reset()
		return 0, fmt.Errorf("owner %s %s of %s: %w", r.Kind, r.Name, path(o), err)
	}
	ns := ""
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = o.namespace
	}
	live, err := c.dyn.Resource(m.Resource).Namespace(ns).Get(ctx, r.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ownerDangling, nil
	case err != nil:
		return 0, fmt.Errorf("look up owner %s %s of %s: %w", r.Kind, r.Name, path(o), err)
	case live.GetUID() != r.UID:
		return ownerDangling, nil
	case live.GetDeletionTimestamp() != nil && slices.Contains(live.GetFinalizers(), FinalizerForeground):
		return ownerWaiting, nil
	}
	return ownerSolid, nil
}

// orphan strips the owner from every dependent, then removes the orphan finalizer.
func (c *Collector) orphan(ctx context.Context, o *object) error {
	var errs []error
	for _, d := range c.graph.dependentsOf(o.uid) {
		if err := c.patchOwners(ctx, d, []types.UID{o.uid}, nil); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return c.removeFinalizer(ctx, o, FinalizerOrphan)
}

// foreground asks every dependent to go (they see their owner waiting) and removes the
// foregroundDeletion finalizer once no dependent blocks the owner any more.
func (c *Collector) foreground(ctx context.Context, o *object) error {
	blocking := 0
	for _, d := range c.graph.dependentsOf(o.uid) {
		c.queue.Add(string(d.uid))
		for _, r := range d.owners {
			if r.UID == o.uid && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
				blocking++
			}
		}
	}
	if blocking > 0 {
		return nil // each dependent's deletion requeues the owner
	}
	return c.removeFinalizer(ctx, o, FinalizerForeground)
}

func (c *Collector) patchOwners(ctx context.Context, o *object, remove, unblock []types.UID) error {
	var refs []metav1.OwnerReference
	f := false
	for _, r := range o.owners {
		if slices.Contains(remove, r.UID) {
			continue
		}
		if slices.Contains(unblock, r.UID) {
			r.BlockOwnerDeletion = &f
		}
		refs = append(refs, r)
	}
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return c.patch(ctx, o, map[string]any{"ownerReferences": refs})
}

func (c *Collector) removeFinalizer(ctx context.Context, o *object, fin string) error {
	rest := slices.DeleteFunc(slices.Clone(o.finalizers), func(s string) bool { return s == fin })
	if rest == nil {
		rest = []string{}
	}
	return c.patch(ctx, o, map[string]any{"finalizers": rest})
}

// patch merges metadata fields into o, guarded by its uid and resourceVersion so a stale
// graph never overwrites a newer object.
func (c *Collector) patch(ctx context.Context, o *object, md map[string]any) error {
	md["uid"] = o.uid
	md["resourceVersion"] = o.resourceVersion
	body, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(o.gvr).Namespace(o.namespace).Patch(ctx, o.name, types.MergePatchType, body, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The informer will deliver the newer version, which requeues the object.
		return worker.RequeueAfter(100 * time.Millisecond)
	case err != nil:
		return fmt.Errorf("patch %s %s: %w", o.gvr.Resource, path(o), err)
	}
	return nil
}
