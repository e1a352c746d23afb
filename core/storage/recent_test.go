package storage

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TestUpdateFromRememberedState: a store starts updates and conditional deletes from
// the state it last wrote (recent.go). Two stores of one resource on one etcd stand for
// two API servers: each one's remembered state goes stale when the other writes, and
// every answer must still be the one a read of etcd first would give.
func TestUpdateFromRememberedState(t *testing.T) {
	ctx := context.Background()
	b := embeddedFactory(t, Config{})
	a, other := podStore(b), podStore(b)
	key := Key("pods", "default", "p")
	mustCreate(t, a, newPod("default", "p", nil))
	if n := a.(*store).recent.len(); n != 1 {
		t.Fatalf("after a create the store remembers %d states, want 1", n)
	}

	calls := 0
	setImage := func(img string) UpdateFunc {
		return func(cur runtime.Object) (runtime.Object, error) {
			calls++
			p := cur.(*corev1.Pod)
			p.Spec.Containers[0].Image = img
			return p, nil
		}
	}
	// From its own last write: the update function runs once, on that state.
	if _, err := a.GuaranteedUpdate(ctx, key, nil, setImage("v1")); err != nil || calls != 1 {
		t.Fatalf("update from the remembered state: err %v after %d calls, want nil after 1", err, calls)
	}

	// The other store writes: a's remembered state is now old.
	upd, err := other.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		p.Labels = map[string]string{"by": "other"}
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	current := upd.(*corev1.Pod).ResourceVersion
	if got := upd.(*corev1.Pod).Spec.Containers[0].Image; got != "v1" {
		t.Fatalf("other store's update started from image %q, want v1", got)
	}

	// A precondition that holds on etcd's state but not on the remembered one passes.
	p, err := a.GuaranteedUpdate(ctx, key, &Preconditions{ResourceVersion: &current}, setImage("v2"))
	if err != nil {
		t.Fatalf("update with the current resourceVersion from an old remembered state: %v", err)
	}
	if pod := p.(*corev1.Pod); pod.Labels["by"] != "other" || pod.Spec.Containers[0].Image != "v2" {
		t.Fatalf("update lost the other store's write: labels %v image %q", pod.Labels, pod.Spec.Containers[0].Image)
	}

	// An update that changes nothing in etcd's state is a no-op even though it changes
	// the remembered one (other wrote v3; a remembers v2 and asks for v3).
	if _, err := other.GuaranteedUpdate(ctx, key, nil, setImage("v3")); err != nil {
		t.Fatal(err)
	}
	v3, _ := other.Get(ctx, key)
	same, err := a.GuaranteedUpdate(ctx, key, nil, setImage("v3"))
	if err != nil {
		t.Fatal(err)
	}
	if rvOf(t, same) != rvOf(t, v3) {
		t.Fatalf("no-op update on an old remembered state wrote: rv %d, want %d", rvOf(t, same), rvOf(t, v3))
	}

	// An error of the update function on an old remembered state is not final: the
	// function is asked again on the current state.
	if _, err := other.GuaranteedUpdate(ctx, key, nil, setImage("v4")); err != nil {
		t.Fatal(err)
	}
	onlyOnV4 := errors.New("refused on an old state")
	out, err := a.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		if p.Spec.Containers[0].Image != "v4" {
			return nil, onlyOnV4
		}
		p.Spec.Containers[0].Image = "v5"
		return p, nil
	})
	if err != nil || out.(*corev1.Pod).Spec.Containers[0].Image != "v5" {
		t.Fatalf("update whose function refuses the old state: err %v, want it applied on v4", err)
	}

	// Deleted and created again elsewhere: a's state names the old object.
	if _, err := other.Delete(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GuaranteedUpdate(ctx, key, nil, setImage("gone")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of a key deleted by the other store: got %v, want ErrNotFound", err)
	}
	mustCreate(t, a, newPod("default", "p", nil))
	if _, err := other.Delete(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	fresh := newPod("default", "p", nil)
	fresh.UID = "second"
	mustCreate(t, other, fresh)
	oldUID, newUID := types.UID("uid-default-p"), types.UID("second")
	if _, err := a.Delete(ctx, key, &Preconditions{UID: &oldUID}); !errors.Is(err, ErrConflict) {
		t.Fatalf("delete with the old object's uid: got %v, want ErrConflict", err)
	}
	if _, err := a.Delete(ctx, key, &Preconditions{UID: &newUID}); err != nil {
		t.Fatalf("delete with the new object's uid from an old remembered state: %v", err)
	}
	if n := a.(*store).recent.len(); n != 0 {
		t.Fatalf("after the delete the store remembers %d states, want 0", n)
	}
}

// TestRecentStatesBound: the remembered bytes stay under the bound, newer revisions win.
func TestRecentStatesBound(t *testing.T) {
	r := newRecentStates(100)
	for i := range 50 {
		r.put(string(rune('a'+i)), make([]byte, 10), int64(i+1))
		if r.bytes > 100 {
			t.Fatalf("after %d puts %d bytes are remembered, bound 100", i+1, r.bytes)
		}
	}
	if r.len() != 10 {
		t.Fatalf("%d states remembered, want 10 of 10 bytes under a bound of 100", r.len())
	}
	r.put("k", []byte("new"), 7)
	r.put("k", []byte("older"), 6)
	if st, _ := r.get("k"); string(st.data) != "new" || st.rev != 7 {
		t.Fatalf("remembered %q at %d, want the newer revision 7", st.data, st.rev)
	}
	r.put("big", make([]byte, 101), 8)
	if _, ok := r.get("big"); ok {
		t.Fatal("a state larger than the bound was remembered")
	}
	r.forget("k")
	if _, ok := r.get("k"); ok || r.bytes != 10*(r.len()) {
		t.Fatalf("after forget: remembered %v, %d bytes for %d states", ok, r.bytes, r.len())
	}
}
