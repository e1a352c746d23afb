package podcontrol

import (
	"errors"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/expectations"
	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

func daemonSet(name string, uid types.UID, app string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}
}

func pod(name, rv string, lbls map[string]string, owner *appsv1.DaemonSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv, Labels: lbls}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{podstate.ControllerRef(owner, "apps/v1", "DaemonSet")}
	}
	return p
}

// drain returns the keys queued so far, sorted, and marks them done.
func drain(t *testing.T, q worker.Queue) []string {
	t.Helper()
	var keys []string
	for q.Len() > 0 {
		k, _ := q.Get()
		keys = append(keys, k)
		q.Done(k)
		q.Forget(k)
	}
	sort.Strings(keys)
	return keys
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEventsMapPodsToOwners(t *testing.T) {
	web, db := daemonSet("web", "uid-web", "web"), daemonSet("db", "uid-db", "db")
	cached := map[string]*appsv1.DaemonSet{"web": web, "db": db}
	q := worker.NewQueue("podcontrol-test")
	defer q.ShutDown()
	exp := expectations.New()
	var gone []string
	e := &Events[*appsv1.DaemonSet]{
		Kind: "DaemonSet", Queue: q, Expectations: exp,
		Get: func(ns, name string) (*appsv1.DaemonSet, error) {
			if ds, ok := cached[name]; ok {
				return ds, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, name)
		},
		List:     func(string) ([]*appsv1.DaemonSet, error) { return []*appsv1.DaemonSet{web, db}, nil },
		Selector: func(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector },
		Gone:     func(obj metav1.Object) { gone = append(gone, obj.GetName()) },
	}
	h := e.Handler()

	// An owned pod's creation is what web's expectations wait for.
	exp.ExpectCreations("ns/web", 1)
	owned := pod("web-a", "1", map[string]string{"app": "web"}, web)
	h.OnAdd(owned, false)
	if got := drain(t, q); !equal(got, []string{"ns/web"}) {
		t.Fatalf("add of an owned pod queued %v, want [ns/web]", got)
	}
	if adds, _ := exp.Pending("ns/web"); adds != 0 {
		t.Fatalf("creation not observed: %d creations still pending", adds)
	}

	// A resync (same resourceVersion) queues nothing.
	h.OnUpdate(owned, owned)
	if got := drain(t, q); len(got) != 0 {
		t.Fatalf("resync queued %v", got)
	}

	// An orphan queues every owner whose selector matches it, and only those.
	orphan := pod("stray", "1", map[string]string{"app": "db"}, nil)
	h.OnAdd(orphan, false)
	if got := drain(t, q); !equal(got, []string{"ns/db"}) {
		t.Fatalf("add of an orphan queued %v, want [ns/db]", got)
	}
	relabelled := orphan.DeepCopy()
	relabelled.ResourceVersion, relabelled.Labels = "2", map[string]string{"app": "web"}
	h.OnUpdate(orphan, relabelled)
	if got := drain(t, q); !equal(got, []string{"ns/web"}) {
		t.Fatalf("relabelled orphan queued %v, want [ns/web]", got)
	}

	// A pod moving from db to web queues both.
	moved := owned.DeepCopy()
	moved.ResourceVersion = "3"
	moved.OwnerReferences = []metav1.OwnerReference{podstate.ControllerRef(db, "apps/v1", "DaemonSet")}
	h.OnUpdate(owned, moved)
	if got := drain(t, q); !equal(got, []string{"ns/db", "ns/web"}) {
		t.Fatalf("controller change queued %v, want both owners", got)
	}

	// The deletion is observed once whether it shows as deletionTimestamp or as a tombstone.
	exp.ExpectDeletions("ns/web", []string{string(owned.UID)})
	deleting := owned.DeepCopy()
	deleting.ResourceVersion = "4"
	now := metav1.NewTime(time.Unix(1, 0))
	deleting.DeletionTimestamp = &now
	h.OnUpdate(owned, deleting)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/web-a", Obj: deleting})
	if got := drain(t, q); !equal(got, []string{"ns/web"}) {
		t.Fatalf("deletion queued %v, want [ns/web]", got)
	}
	if _, dels := exp.Pending("ns/web"); dels != 0 {
		t.Fatalf("deletion not observed: %d deletions still pending", dels)
	}

	// A pod whose owner is gone, or is a namesake with another uid, queues nothing and
	// is reported as gone; a pod of another kind is not looked at.
	stale := pod("old-a", "1", nil, daemonSet("web", "uid-before", "web"))
	h.OnAdd(stale, false)
	other := pod("rs-a", "1", nil, nil)
	tr := true
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "uid-web", Controller: &tr}}
	h.OnAdd(other, false)
	if got := drain(t, q); len(got) != 0 {
		t.Fatalf("pods without a cached owner queued %v", got)
	}
	if !equal(gone, []string{"old-a"}) {
		t.Fatalf("Gone called for %v, want [old-a]", gone)
	}
}

func TestOwnerHandlerForgetsOnDelete(t *testing.T) {
	q := worker.NewQueue("podcontrol-owner-test")
	defer q.ShutDown()
	exp := expectations.New()
	exp.ExpectCreations("ns/web", 3)
	var forgot []string
	h := OwnerHandler(q, exp, func(key string) { forgot = append(forgot, key) })
	ds := daemonSet("web", "uid-web", "web")
	h.OnAdd(ds, false)
	if got := drain(t, q); !equal(got, []string{"ns/web"}) {
		t.Fatalf("add queued %v", got)
	}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: ds})
	if got := drain(t, q); !equal(got, []string{"ns/web"}) {
		t.Fatalf("delete queued %v", got)
	}
	if adds, _ := exp.Pending("ns/web"); adds != 0 || !equal(forgot, []string{"ns/web"}) {
		t.Fatalf("after delete: %d creations pending, forget called with %v", adds, forgot)
	}
}

func TestBatchesStartWhereTheLastPassSucceeded(t *testing.T) {
	var b Batches
	if got := b.Initial("ns/job", 10); got != 1 {
		t.Fatalf("first pass starts at %d, want 1", got)
	}
	b.Done("ns/job", 10, nil)
	if got := b.Initial("ns/job", 25); got != 10 {
		t.Fatalf("after 10 created: %d, want 10", got)
	}
	if got := b.Initial("ns/job", 3); got != 3 {
		t.Fatalf("never more than asked for: %d", got)
	}
	if got := b.Initial("ns/other", 5); got != 1 {
		t.Fatalf("another owner starts at %d, want 1", got)
	}
	b.Done("ns/job", 4, errors.New("quota"))
	if got := b.Initial("ns/job", 25); got != 1 {
		t.Fatalf("after a failure: %d, want 1", got)
	}
	b.Done("ns/job", 8, nil)
	b.Forget("ns/job")
	if got := b.Initial("ns/job", 25); got != 1 {
		t.Fatalf("after Forget: %d, want 1", got)
	}
}
