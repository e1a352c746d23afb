package garbagecollector

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Finalizers the API server sets for the propagation policies (upstream names).
const (
	FinalizerOrphan     = metav1.FinalizerOrphanDependents
	FinalizerForeground = metav1.FinalizerDeleteDependents
)

// object is one node of the ownership graph: what the GC needs of any object.
type object struct {
	gvr             schema.GroupVersionResource
	namespace, name string
	uid             types.UID
	owners          []metav1.OwnerReference
	deleting        bool
	finalizers      []string
	resourceVersion string
}

func (o *object) has(finalizer string) bool { return slices.Contains(o.finalizers, finalizer) }

// waitingForDependents: foreground deletion in progress, the object waits for its
// blocking dependents to go.
func (o *object) waitingForDependents() bool { return o.deleting && o.has(FinalizerForeground) }

// graph indexes objects by uid and owners by the uids of their dependents.
type graph struct {
	mu         sync.RWMutex
	objects    map[types.UID]*object
	dependents map[types.UID]map[types.UID]bool
}

func newGraph() *graph {
	return &graph{objects: map[types.UID]*object{}, dependents: map[types.UID]map[types.UID]bool{}}
}

// upsert stores o and returns the previous version, if any.
func (g *graph) upsert(o *object) *object {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.objects[o.uid]
	if old != nil {
		for _, r := range old.owners {
			g.unlink(r.UID, o.uid)
		}
	}
	g.objects[o.uid] = o
	for _, r := range o.owners {
		if g.dependents[r.UID] == nil {
			g.dependents[r.UID] = map[types.UID]bool{}
		}
		g.dependents[r.UID][o.uid] = true
	}
	return old
}

func (g *graph) unlink(owner, dep types.UID) {
	if m := g.dependents[owner]; m != nil {
		delete(m, dep)
		if len(m) == 0 {
			delete(g.dependents, owner)
		}
	}
}

// remove drops uid and returns it with its dependents' uids.
func (g *graph) remove(uid types.UID) (*object, []types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.objects[uid]
	if o == nil {
		return nil, nil
	}
	delete(g.objects, uid)
	for _, r := range o.owners {
		g.unlink(r.UID, uid)
	}
	var deps []types.UID
	for d := range g.dependents[uid] {
		deps = append(deps, d)
	}
	return o, deps
}

func (g *graph) get(uid types.UID) *object {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.objects[uid]
}

// dependentsOf returns the objects that name uid as owner.
func (g *graph) dependentsOf(uid types.UID) []*object {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*object
	for d := range g.dependents[uid] {
		if o := g.objects[d]; o != nil {
			out = append(out, o)
		}
	}
	return out
}

// ownerState is how an object stands towards one of its owners.
type ownerState int

const (
	ownerSolid    ownerState = iota // exists and is not deleting its dependents first
	ownerDangling                   // gone, or replaced by another object with the same name
	ownerWaiting                    // foreground deletion: waits for its dependents
)

// Action is what the collector does with an object after classifying its owners.
type Action struct {
	// Delete with this propagation policy ("" means: do not delete).
	Delete metav1.DeletionPropagation
	// RemoveOwners are ownerReferences to drop (dangling ones, when a solid owner remains).
	RemoveOwners []types.UID
	// Unblock are ownerReferences whose blockOwnerDeletion must become false so a waiting
	// owner can finish while a solid owner keeps the object.
	Unblock []types.UID
}

// Decide is the collector's rule for an object that is not being deleted, given the state of
// each of its owners (by uid), as upstream's attemptToDeleteItem: while one owner is solid
// the object stays, minus references to dangling owners; otherwise it is deleted,
// foreground if an owner waits for it and it has dependents of its own, else with the
// policy its own finalizers ask for (background by default).
func Decide(o *object, states map[types.UID]ownerState, hasDependents bool) Action {
	var solid, dangling, waiting []types.UID
	for _, r := range o.owners {
		switch states[r.UID] {
		case ownerSolid:
			solid = append(solid, r.UID)
		case ownerDangling:
			dangling = append(dangling, r.UID)
		case ownerWaiting:
			if r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
				waiting = append(waiting, r.UID)
			} else {
				waiting = append(waiting, "") // counts, needs no unblocking
			}
		}
	}
	if len(dangling) == 0 && len(waiting) == 0 {
		return Action{}
	}
	if len(solid) > 0 {
		var unblock []types.UID
		for _, u := range waiting {
			if u != "" {
				unblock = append(unblock, u)
			}
		}
		return Action{RemoveOwners: dangling, Unblock: unblock}
	}
	switch {
	case len(waiting) > 0 && hasDependents:
		return Action{Delete: metav1.DeletePropagationForeground}
	case o.has(FinalizerOrphan):
		return Action{Delete: metav1.DeletePropagationOrphan}
	case o.has(FinalizerForeground):
		return Action{Delete: metav1.DeletePropagationForeground}
	}
	return Action{Delete: metav1.DeletePropagationBackground}
}
