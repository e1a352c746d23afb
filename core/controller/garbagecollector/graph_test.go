package garbagecollector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func ref(uid string, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{UID: types.UID(uid), Name: uid, Kind: "ReplicaSet", APIVersion: "apps/v1", BlockOwnerDeletion: &block}
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name       string
		owners     []metav1.OwnerReference
		finalizers []string
		states     map[types.UID]ownerState
		hasDeps    bool
		want       Action
	}{
		{"solid owner: keep", []metav1.OwnerReference{ref("a", true)}, nil, map[types.UID]ownerState{"a": ownerSolid}, false, Action{}},
		{"dangling: background", []metav1.OwnerReference{ref("a", true)}, nil, map[types.UID]ownerState{"a": ownerDangling}, false, Action{Delete: metav1.DeletePropagationBackground}},
		{"dangling with orphan finalizer", []metav1.OwnerReference{ref("a", true)}, []string{FinalizerOrphan}, map[types.UID]ownerState{"a": ownerDangling}, false, Action{Delete: metav1.DeletePropagationOrphan}},
		{"waiting owner, own dependents: foreground", []metav1.OwnerReference{ref("a", true)}, nil, map[types.UID]ownerState{"a": ownerWaiting}, true, Action{Delete: metav1.DeletePropagationForeground}},
		{"waiting owner, no dependents: background", []metav1.OwnerReference{ref("a", true)}, nil, map[types.UID]ownerState{"a": ownerWaiting}, false, Action{Delete: metav1.DeletePropagationBackground}},
		{"one solid one dangling: drop the dangling ref", []metav1.OwnerReference{ref("a", true), ref("b", false)}, nil, map[types.UID]ownerState{"a": ownerSolid, "b": ownerDangling}, false, Action{RemoveOwners: []types.UID{"b"}}},
		{"one solid one waiting: unblock", []metav1.OwnerReference{ref("a", false), ref("b", true)}, nil, map[types.UID]ownerState{"a": ownerSolid, "b": ownerWaiting}, false, Action{Unblock: []types.UID{"b"}}},
	}
	for _, c := range cases {
		o := &object{uid: "x", owners: c.owners, finalizers: c.finalizers}
		got := Decide(o, c.states, c.hasDeps)
		if got.Delete != c.want.Delete || len(got.RemoveOwners) != len(c.want.RemoveOwners) || len(got.Unblock) != len(c.want.Unblock) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
			continue
		}
		for i := range got.RemoveOwners {
			if got.RemoveOwners[i] != c.want.RemoveOwners[i] {
				t.Errorf("%s: remove %v", c.name, got.RemoveOwners)
			}
		}
		for i := range got.Unblock {
			if got.Unblock[i] != c.want.Unblock[i] {
				t.Errorf("%s: unblock %v", c.name, got.Unblock)
			}
		}
	}
}

func TestGraph(t *testing.T) {
	g := newGraph()
	g.upsert(&object{uid: "owner"})
	g.upsert(&object{uid: "d1", owners: []metav1.OwnerReference{ref("owner", true)}})
	g.upsert(&object{uid: "d2", owners: []metav1.OwnerReference{ref("owner", true)}})
	if n := len(g.dependentsOf("owner")); n != 2 {
		t.Fatalf("dependents = %d", n)
	}
	// d2 drops its owner (orphaned): the index follows.
	g.upsert(&object{uid: "d2"})
	if deps := g.dependentsOf("owner"); len(deps) != 1 || deps[0].uid != "d1" {
		t.Fatalf("after orphaning: %v", deps)
	}
	o, deps := g.remove("owner")
	if o == nil || len(deps) != 1 || deps[0] != "d1" {
		t.Fatalf("remove: %v %v", o, deps)
	}
	g.remove("d1")
	if len(g.dependents) != 0 {
		t.Fatalf("index leaks: %v", g.dependents)
	}
}
