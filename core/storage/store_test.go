package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// suite is run against the embedded etcd and against a separate etcd process.
var suite = []struct {
	name string
	run  func(t *testing.T, newBackend backendFactory)
}{
	{"CRUD", testCRUD},
	{"StoredForm", testStoredForm},
	{"Preconditions", testPreconditions},
	{"ConcurrentGuaranteedUpdate", testConcurrentGuaranteedUpdate},
	{"PagingAcrossWrites", testPagingAcrossWrites},
	{"PagingWithPredicate", testPagingWithPredicate},
	{"ListAtOldRevision", testListAtOldRevision},
	{"WatchFromZero", testWatchFromZero},
	{"WatchFromRevision", testWatchFromRevision},
	{"WatchPredicateTransitions", testWatchPredicateTransitions},
	{"WatchersShareOneEtcdWatch", testWatchersShareOneEtcdWatch},
	{"SlowWatcherIsClosed", testSlowWatcherIsClosed},
	{"Bookmarks", testBookmarks},
	{"ExpiredAfterCompaction", testExpiredAfterCompaction},
	{"TTL", testTTL},
	{"WatchConsistencyUnderLoad", testWatchConsistencyUnderLoad},
	{"WatchIndex", testWatchIndex},
}

func TestEmbedded(t *testing.T) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, embeddedFactory)
		})
	}
}

func TestExternalEtcd(t *testing.T) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, externalFactory)
		})
	}
}

func testCRUD(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	key := Key("pods", "default", "a")

	created := mustCreate(t, s, newPod("default", "a", nil))
	if created.Kind != "Pod" || created.APIVersion != "v1" {
		t.Errorf("created object has kind %q apiVersion %q, want Pod v1", created.Kind, created.APIVersion)
	}
	rv1 := rvOf(t, created)

	if _, err := s.Create(ctx, key, newPod("default", "a", nil)); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second create: got %v, want ErrAlreadyExists", err)
	}

	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if rvOf(t, got) != rv1 || got.(*corev1.Pod).Spec.Containers[0].Image != "busybox" {
		t.Fatalf("get returned %+v, want the created pod at rv %d", got, rv1)
	}

	updated, err := s.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		p.Spec.Containers[0].Image = "busybox:2"
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rv2 := rvOf(t, updated)
	if rv2 <= rv1 {
		t.Fatalf("update rv %d not after create rv %d", rv2, rv1)
	}

	// An update that changes nothing writes nothing and keeps the resourceVersion.
	same, err := s.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	if err != nil {
		t.Fatal(err)
	}
	if rvOf(t, same) != rv2 {
		t.Fatalf("no-op update changed rv from %d to %d", rv2, rvOf(t, same))
	}

	// An error from tryUpdate aborts with that error.
	boom := errors.New("boom")
	if _, err := s.GuaranteedUpdate(ctx, key, nil, func(runtime.Object) (runtime.Object, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("tryUpdate error: got %v, want boom", err)
	}

	if n, err := s.Count(ctx, Prefix("pods", "")); err != nil || n != 1 {
		t.Fatalf("count = %d, %v; want 1", n, err)
	}

	deleted, err := s.Delete(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := deleted.(*corev1.Pod); p.Spec.Containers[0].Image != "busybox:2" || rvOf(t, p) <= rv2 {
		t.Fatalf("delete returned image %q rv %d; want the last state with the deletion's revision", p.Spec.Containers[0].Image, rvOf(t, p))
	}
	for name, err := range map[string]error{
		"get":    func() error { _, err := s.Get(ctx, key); return err }(),
		"delete": func() error { _, err := s.Delete(ctx, key, nil); return err }(),
		"update": func() error {
			_, err := s.GuaranteedUpdate(ctx, key, nil, func(c runtime.Object) (runtime.Object, error) { return c, nil })
			return err
		}(),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s after delete: got %v, want ErrNotFound", name, err)
		}
	}
}

// testStoredForm checks what lands in etcd: the key layout and, for a built-in type,
// protobuf as upstream stores it ("k8s\x00", then apiVersion and kind in a
// runtime.Unknown) without resourceVersion.
func testStoredForm(t *testing.T, newBackend backendFactory) {
	b := newBackend(t, Config{})
	s := podStore(b)
	mustCreate(t, s, newPod("ns1", "a", nil))
	resp, err := b.Client().Get(context.Background(), "/registry/pods/ns1/a")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get: %v, %d kvs", err, len(resp.Kvs))
	}
	raw := resp.Kvs[0].Value
	if !bytes.HasPrefix(raw, []byte("k8s\x00")) {
		t.Fatalf("stored value is not upstream's protobuf: %q", raw)
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(raw[4:]); err != nil {
		t.Fatalf("stored value is not a runtime.Unknown: %v", err)
	}
	if unk.Kind != "Pod" || unk.APIVersion != "v1" {
		t.Errorf("stored kind/apiVersion = %v/%v", unk.Kind, unk.APIVersion)
	}
	var p corev1.Pod
	if err := DecodeValue(raw, &p); err != nil {
		t.Fatalf("DecodeValue: %v", err)
	}
	if p.Name != "a" || p.Namespace != "ns1" || p.ResourceVersion != "" {
		t.Errorf("stored pod: name %q namespace %q resourceVersion %q (want a, ns1, none)", p.Name, p.Namespace, p.ResourceVersion)
	}
}

func testPreconditions(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	key := Key("pods", "default", "a")
	p := mustCreate(t, s, newPod("default", "a", nil))
	rv := p.ResourceVersion
	uid := p.UID
	wrongUID := types.UID("other")
	staleRV := strconv.FormatInt(rvOf(t, p)-1, 10)
	touch := func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.Pod)
		c.Labels = map[string]string{"touched": strconv.FormatInt(time.Now().UnixNano(), 10)}
		return c, nil
	}

	cases := []struct {
		name string
		pre  *Preconditions
	}{
		{"wrong uid", &Preconditions{UID: &wrongUID}},
		{"stale resourceVersion", &Preconditions{ResourceVersion: &staleRV}},
		{"right uid, stale rv", &Preconditions{UID: &uid, ResourceVersion: &staleRV}},
	}
	for _, tc := range cases {
		if _, err := s.GuaranteedUpdate(ctx, key, tc.pre, touch); !errors.Is(err, ErrConflict) {
			t.Errorf("update with %s: got %v, want ErrConflict", tc.name, err)
		}
		if _, err := s.Delete(ctx, key, tc.pre); !errors.Is(err, ErrConflict) {
			t.Errorf("delete with %s: got %v, want ErrConflict", tc.name, err)
		}
	}
	// Nothing was written by the failed calls.
	if got, _ := s.Get(ctx, key); got.(*corev1.Pod).ResourceVersion != rv {
		t.Fatalf("failed preconditions changed the object: rv %s -> %s", rv, got.(*corev1.Pod).ResourceVersion)
	}
	upd, err := s.GuaranteedUpdate(ctx, key, &Preconditions{UID: &uid, ResourceVersion: &rv}, touch)
	if err != nil {
		t.Fatalf("update with matching preconditions: %v", err)
	}
	// The old resourceVersion is now stale.
	if _, err := s.Delete(ctx, key, &Preconditions{ResourceVersion: &rv}); !errors.Is(err, ErrConflict) {
		t.Fatalf("delete with the pre-update rv: got %v, want ErrConflict", err)
	}
	newRV := upd.(*corev1.Pod).ResourceVersion
	if _, err := s.Delete(ctx, key, &Preconditions{UID: &uid, ResourceVersion: &newRV}); err != nil {
		t.Fatalf("delete with matching preconditions: %v", err)
	}
}

func testConcurrentGuaranteedUpdate(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	key := Key("pods", "default", "counter")
	mustCreate(t, s, newPod("default", "counter", map[string]string{"n": "0"}))
	const workers, perWorker = 10, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				_, err := s.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
					p := cur.(*corev1.Pod)
					n, err := strconv.Atoi(p.Labels["n"])
					if err != nil {
						return nil, err
					}
					p.Labels["n"] = strconv.Itoa(n + 1)
					return p, nil
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent update: %v", err)
	}
	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if n := got.(*corev1.Pod).Labels["n"]; n != strconv.Itoa(workers*perWorker) {
		t.Fatalf("counter = %s after %d increments: updates were lost", n, workers*perWorker)
	}
}

func testPagingAcrossWrites(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	var want []string
	for i := 0; i < 25; i++ {
		name := fmt.Sprintf("p%02d", i)
		mustCreate(t, s, newPod("default", name, nil))
		want = append(want, name)
	}
	mustCreate(t, s, newPod("other", "outside", nil)) // another namespace: not listed

	var got []string
	var listRV, remainingFirst string
	cont := ""
	for page := 0; ; page++ {
		out, err := s.List(ctx, Prefix("pods", "default"), ListOptions{Limit: 10, Continue: cont})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		l := out.(*corev1.PodList)
		if page == 0 {
			listRV = l.ResourceVersion
			if l.RemainingItemCount != nil {
				remainingFirst = strconv.FormatInt(*l.RemainingItemCount, 10)
			}
		} else if l.ResourceVersion != listRV {
			t.Fatalf("page %d read at rv %s, first page at %s: pages must share one snapshot", page, l.ResourceVersion, listRV)
		}
		if len(l.Items) > 10 {
			t.Fatalf("page %d has %d items, limit 10", page, len(l.Items))
		}
		got = append(got, names(l)...)
		// Writes between pages are not part of the snapshot.
		mustCreate(t, s, newPod("default", fmt.Sprintf("later%d", page), nil))
		mustDelete(t, s, Key("pods", "default", want[len(want)-1-page]))
		cont = l.Continue
		if cont == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged list = %v, want %v", got, want)
	}
	if remainingFirst != "15" {
		t.Errorf("remainingItemCount on the first page = %q, want 15", remainingFirst)
	}
	if _, err := s.List(ctx, Prefix("pods", "default"), ListOptions{Limit: 10, Continue: "not-a-token"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad continue token: got %v, want ErrInvalid", err)
	}
}

func testPagingWithPredicate(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	var want []string
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("p%02d", i)
		labels := map[string]string{"app": "other"}
		if i%7 == 0 { // sparse matches force reading past several raw pages
			labels["app"] = "web"
			want = append(want, name)
		}
		mustCreate(t, s, newPod("default", name, labels))
	}
	pred := func(obj runtime.Object) bool { return obj.(*corev1.Pod).Labels["app"] == "web" }
	var got []string
	cont := ""
	for pages := 0; ; pages++ {
		out, err := s.List(ctx, Prefix("pods", ""), ListOptions{Limit: 2, Continue: cont, Predicate: pred})
		if err != nil {
			t.Fatal(err)
		}
		l := out.(*corev1.PodList)
		if len(l.Items) > 2 {
			t.Fatalf("page has %d items, limit 2", len(l.Items))
		}
		if l.Continue != "" && len(l.Items) != 2 {
			t.Fatalf("a page with a continue token has %d items; it must be filled to the limit", len(l.Items))
		}
		got = append(got, names(l)...)
		if cont = l.Continue; cont == "" {
			break
		}
		if pages > 40 {
			t.Fatal("paging does not terminate")
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("filtered paged list = %v, want %v", got, want)
	}
}

func testListAtOldRevision(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	a := mustCreate(t, s, newPod("default", "a", nil))
	mustCreate(t, s, newPod("default", "b", nil))
	mustDelete(t, s, Key("pods", "default", "a"))
	out, err := s.List(ctx, Prefix("pods", ""), ListOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(out); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("list at rv %s = %v, want [a]", a.ResourceVersion, got)
	}
	if rv := out.(*corev1.PodList).ResourceVersion; rv != a.ResourceVersion {
		t.Fatalf("list at rv %s reports rv %s", a.ResourceVersion, rv)
	}
	now, err := s.List(ctx, Prefix("pods", ""), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(now); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("current list = %v, want [b]", got)
	}
	future := strconv.FormatInt(rvOf(t, now)+1000, 10)
	if _, err := s.List(ctx, Prefix("pods", ""), ListOptions{ResourceVersion: future}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("list at a future rv: got %v, want ErrTooLarge", err)
	}
	if _, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: future}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("watch from a future rv: got %v, want ErrTooLarge", err)
	}
	if _, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: "x"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("watch from rv x: got %v, want ErrInvalid", err)
	}
	if _, err := s.List(ctx, Prefix("pods", ""), ListOptions{ResourceVersion: "abc"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("list at rv abc: got %v, want ErrInvalid", err)
	}
}

func testWatchFromZero(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	mustCreate(t, s, newPod("default", "a", nil))
	mustCreate(t, s, newPod("default", "b", nil))
	mustCreate(t, s, newPod("kube-system", "c", nil))
	for _, rv := range []string{"", "0"} {
		w, err := s.Watch(ctx, Prefix("pods", "default"), WatchOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatal(err)
		}
		expectEvent(t, w, watch.Added, "a")
		expectEvent(t, w, watch.Added, "b")
		w.Stop()
	}
	w, err := s.Watch(ctx, Prefix("pods", "default"), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expectEvent(t, w, watch.Added, "a")
	expectEvent(t, w, watch.Added, "b")
	mustCreate(t, s, newPod("kube-system", "d", nil)) // other namespace: not seen
	mustCreate(t, s, newPod("default", "e", nil))
	expectEvent(t, w, watch.Added, "e")
	mustUpdate(t, s, Key("pods", "default", "a"), func(p *corev1.Pod) { p.Labels = map[string]string{"x": "y"} })
	if p := expectEvent(t, w, watch.Modified, "a"); p.Labels["x"] != "y" {
		t.Fatalf("MODIFIED carries labels %v", p.Labels)
	}
	deleted, err := s.Delete(ctx, Key("pods", "default", "b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := expectEvent(t, w, watch.Deleted, "b"); p.ResourceVersion != deleted.(*corev1.Pod).ResourceVersion {
		t.Fatalf("DELETED rv %s, Delete returned rv %s", p.ResourceVersion, deleted.(*corev1.Pod).ResourceVersion)
	}
	w.Stop()
	for range w.ResultChan() {
	}
}

func testWatchFromRevision(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	a := mustCreate(t, s, newPod("default", "a", nil))
	mustCreate(t, s, newPod("default", "b", nil))
	mustDelete(t, s, Key("pods", "default", "a"))
	// From a's revision: b's creation and a's deletion, nothing before.
	w, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expectEvent(t, w, watch.Added, "b")
	expectEvent(t, w, watch.Deleted, "a")
	mustCreate(t, s, newPod("default", "c", nil))
	expectEvent(t, w, watch.Added, "c")

	// Watching one object by its key sees only that object.
	one, err := s.Watch(ctx, Key("pods", "default", "c"), WatchOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Stop()
	mustCreate(t, s, newPod("default", "c2", nil)) // shares the prefix "c"
	mustDelete(t, s, Key("pods", "default", "c"))
	expectEvent(t, one, watch.Added, "c")
	expectEvent(t, one, watch.Deleted, "c")
}

func testWatchPredicateTransitions(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	pred := func(obj runtime.Object) bool { return obj.(*corev1.Pod).Labels["app"] == "web" }
	w, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{Predicate: pred})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	setApp := func(name, app string) {
		t.Helper()
		mustUpdate(t, s, Key("pods", "default", name), func(p *corev1.Pod) { p.Labels = map[string]string{"app": app} })
	}
	mustCreate(t, s, newPod("default", "x", map[string]string{"app": "db"})) // never matches
	mustCreate(t, s, newPod("default", "a", map[string]string{"app": "db"}))
	setApp("x", "cache")
	setApp("a", "web") // enters
	if p := expectEvent(t, w, watch.Added, "a"); p.Labels["app"] != "web" {
		t.Fatalf("ADDED carries %v", p.Labels)
	}
	setApp("a", "web2") // leaves: DELETED with the new state
	if p := expectEvent(t, w, watch.Deleted, "a"); p.Labels["app"] != "web2" {
		t.Fatalf("DELETED on leaving carries %v, want the new object", p.Labels)
	}
	setApp("a", "web")
	expectEvent(t, w, watch.Added, "a")
	mustUpdate(t, s, Key("pods", "default", "a"), func(p *corev1.Pod) { p.Annotations = map[string]string{"k": "v"} })
	expectEvent(t, w, watch.Modified, "a")
	mustDelete(t, s, Key("pods", "default", "x")) // not matching: unseen
	mustDelete(t, s, Key("pods", "default", "a"))
	expectEvent(t, w, watch.Deleted, "a")
}

func testWatchersShareOneEtcdWatch(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	b := newBackend(t, Config{})
	s := podStore(b)
	const n = 50
	var ws []watch.Interface
	for i := 0; i < n; i++ {
		ns := "default"
		if i%2 == 1 {
			ns = ""
		}
		w, err := s.Watch(ctx, Prefix("pods", ns), WatchOptions{ResourceVersion: "1"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	// A second store of the same resource shares the cache too.
	w2, err := podStore(b).Watch(ctx, Prefix("pods", ""), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	ws = append(ws, w2)
	if got := b.EtcdWatchCount(); got != 1 {
		t.Fatalf("%d watchers of pods hold %d etcd watches, want 1", n+1, got)
	}
	cms := b.ForResource("configmaps", func() runtime.Object { return &corev1.ConfigMap{} }, func() runtime.Object { return &corev1.ConfigMapList{} })
	wc, err := cms.Watch(ctx, Prefix("configmaps", ""), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Stop()
	if got := b.EtcdWatchCount(); got != 2 {
		t.Fatalf("watches of two resources hold %d etcd watches, want 2", got)
	}
	if b.etcd == nil {
		// Ask the etcd process itself how many watchers it serves.
		waitEtcdWatchers(t, b.cfg.Endpoints[0], 2)
	}
	mustCreate(t, s, newPod("default", "a", nil))
	for _, w := range ws {
		expectEvent(t, w, watch.Added, "a")
	}
}

func testSlowWatcherIsClosed(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{WatchBuffer: 4}))
	slow, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	const n = 30
	for i := 0; i < n; i++ {
		mustCreate(t, s, newPod("default", fmt.Sprintf("p%02d", i), nil))
		// The fast watcher keeps up and sees every event although slow never reads.
		expectEvent(t, fast, watch.Added, fmt.Sprintf("p%02d", i))
	}
	// The slow watcher got at most its buffer (plus one in hand), then was closed.
	got := 0
	timeout := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case _, ok := <-slow.ResultChan():
			if ok {
				got++
			}
			open = ok
		case <-timeout:
			t.Fatal("the slow watcher was not closed")
		}
	}
	if got >= n {
		t.Fatalf("slow watcher received all %d events; it should have been closed", got)
	}
}

func testBookmarks(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{BookmarkInterval: 50 * time.Millisecond}))
	w, err := s.Watch(ctx, Prefix("pods", "default"), WatchOptions{AllowBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A write in another namespace moves the revision without an event for this watch;
	// a bookmark must eventually carry a revision at least that new.
	other := mustCreate(t, s, newPod("elsewhere", "x", nil))
	for {
		ev := nextEvent(t, w)
		if ev.Type != watch.Bookmark {
			t.Fatalf("got %s event, want only bookmarks", ev.Type)
		}
		if _, ok := ev.Object.(*corev1.Pod); !ok {
			t.Fatalf("bookmark carries %T, want *corev1.Pod", ev.Object)
		}
		if rvOf(t, ev.Object) >= rvOf(t, other) {
			break
		}
	}
	// Without AllowBookmarks none arrive: the next event is the real one.
	plain, err := s.Watch(ctx, Prefix("pods", "default"), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()
	time.Sleep(200 * time.Millisecond) // several bookmark intervals pass
	mustCreate(t, s, newPod("default", "a", nil))
	if ev := nextEvent(t, plain); ev.Type != watch.Added {
		t.Fatalf("watch without bookmarks got %s first", ev.Type)
	}
}

func testExpiredAfterCompaction(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	b := newBackend(t, Config{CompactionInterval: 100 * time.Millisecond})
	s := podStore(b)
	// A running watch makes the cache exist before the compaction.
	w, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	old := mustCreate(t, s, newPod("default", "a", nil))
	mustCreate(t, s, newPod("default", "b", nil))
	page, err := s.List(ctx, Prefix("pods", ""), ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	token := page.(*corev1.PodList).Continue
	if token == "" {
		t.Fatal("expected a continue token")
	}
	// Wait until the compactor has removed old's revision (two intervals).
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := b.Client().Get(ctx, "x", clientv3.WithRev(rvOf(t, old)))
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("history was not compacted within 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The compactor tells the watch cache right after etcd's Compact returns, which the
	// Get above may see first: give the cache a moment to learn it.
	for {
		w, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: strconv.FormatInt(rvOf(t, old)-1, 10)})
		if errors.Is(err, ErrExpired) {
			break
		}
		if err == nil {
			w.Stop()
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch from a compacted rv: got %v, want ErrExpired", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := s.List(ctx, Prefix("pods", ""), ListOptions{ResourceVersion: old.ResourceVersion}); !errors.Is(err, ErrExpired) {
		t.Errorf("list at a compacted rv: got %v, want ErrExpired", err)
	}
	if _, err := s.List(ctx, Prefix("pods", ""), ListOptions{Limit: 1, Continue: token}); !errors.Is(err, ErrExpired) {
		t.Errorf("continue with a compacted rv: got %v, want ErrExpired", err)
	}
	// The store keeps working and a watch from the current state does too.
	mustCreate(t, s, newPod("default", "c", nil))
	w2, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	expectEvent(t, w2, watch.Added, "a")
	expectEvent(t, w2, watch.Added, "b")
	expectEvent(t, w2, watch.Added, "c")
}

func testTTL(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	b := newBackend(t, Config{})
	events := b.ForResource("events", func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} }, WithTTL(2*time.Second))
	w, err := events.Watch(ctx, Prefix("events", ""), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, name := range []string{"a", "b"} {
		if _, err := events.Create(ctx, Key("events", "default", name), newPod("default", name, nil)); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, w, watch.Added, name)
	}
	// An update keeps the object on a lease (a put without one would make it immortal).
	mustUpdate(t, events, Key("events", "default", "b"), func(p *corev1.Pod) { p.Labels = map[string]string{"updated": "yes"} })
	expectEvent(t, w, watch.Modified, "b")
	gone := map[string]bool{}
	for len(gone) < 2 {
		ev := nextEvent(t, w)
		if ev.Type != watch.Deleted {
			t.Fatalf("got %s while waiting for expiry", ev.Type)
		}
		gone[ev.Object.(*corev1.Pod).Name] = true
	}
	if n, err := events.Count(ctx, Prefix("events", "")); err != nil || n != 0 {
		t.Fatalf("after expiry count = %d, %v", n, err)
	}
	// Resources without a TTL are untouched.
	mustCreate(t, podStore(b), newPod("default", "stays", nil))
	resp, err := b.Client().Get(ctx, Key("pods", "default", "stays"))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != 0 {
		t.Fatalf("pod without TTL: %v %+v", err, resp)
	}
}

// testWatchConsistencyUnderLoad runs concurrent writers while watchers start from
// different points; every watcher must see strictly increasing revisions, and folding
// its events over its starting state must give exactly the final list.
func testWatchConsistencyUnderLoad(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	s := podStore(newBackend(t, Config{}))
	for i := 0; i < 10; i++ {
		mustCreate(t, s, newPod("default", fmt.Sprintf("seed%d", i), nil))
	}
	type watcher struct {
		w     watch.Interface
		state map[string]string // name -> resourceVersion
	}
	startWatcher := func(rv string) *watcher {
		t.Helper()
		st := map[string]string{}
		if rv != "" {
			l, err := s.List(ctx, Prefix("pods", ""), ListOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range l.(*corev1.PodList).Items {
				st[p.Name] = p.ResourceVersion
			}
		}
		w, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return &watcher{w: w, state: st}
	}
	first, err := s.List(ctx, Prefix("pods", ""), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchers := []*watcher{startWatcher(""), startWatcher(first.(*corev1.PodList).ResourceVersion)}

	const writers, perWriter = 6, 40
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				name := fmt.Sprintf("w%d-%d", g, i%8)
				key := Key("pods", "default", name)
				var err error
				switch i % 3 {
				case 0:
					_, err = s.Create(ctx, key, newPod("default", name, nil))
					if errors.Is(err, ErrAlreadyExists) {
						err = nil
					}
				case 1:
					_, err = s.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
						cur.(*corev1.Pod).Labels = map[string]string{"i": strconv.Itoa(i)}
						return cur, nil
					})
				case 2:
					if i%2 == 0 {
						_, err = s.Delete(ctx, key, nil)
					}
				}
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Error(err)
					return
				}
			}
		}()
	}
	// Watchers joining mid-stream, from a recent list and from the current state.
	mid, err := s.List(ctx, Prefix("pods", ""), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchers = append(watchers, startWatcher(mid.(*corev1.PodList).ResourceVersion), startWatcher(""))
	wg.Wait()
	// A fence object whose event ends every stream.
	fence := mustCreate(t, s, newPod("default", "zz-fence", nil))
	final, err := s.List(ctx, Prefix("pods", ""), ListOptions{ResourceVersion: fence.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, p := range final.(*corev1.PodList).Items {
		want[p.Name] = p.ResourceVersion
	}
	for i, wt := range watchers {
		var last int64
		for {
			ev := nextEvent(t, wt.w)
			p := ev.Object.(*corev1.Pod)
			rv := rvOf(t, p)
			if rv <= last && ev.Type != watch.Added { // initial ADDED events share no order
				t.Fatalf("watcher %d: revision %d after %d", i, rv, last)
			}
			if ev.Type != watch.Added || rv > last {
				last = max(last, rv)
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				wt.state[p.Name] = p.ResourceVersion
			case watch.Deleted:
				delete(wt.state, p.Name)
			}
			if p.Name == "zz-fence" {
				break
			}
		}
		if len(wt.state) != len(want) {
			t.Fatalf("watcher %d ends with %d objects, the store has %d", i, len(wt.state), len(want))
		}
		for name, rv := range want {
			if wt.state[name] != rv {
				t.Fatalf("watcher %d: %s at rv %q, the store has %q", i, name, wt.state[name], rv)
			}
		}
	}
}

func testWatchIndex(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	b := newBackend(t, Config{})
	nodeOf := func(obj runtime.Object) string { return obj.(*corev1.Pod).Spec.NodeName }
	s := b.ForResource("pods", func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} }, WithWatchIndex(nodeOf))
	onNode := func(node, name string) *corev1.Pod {
		p := newPod("default", name, nil)
		p.Spec.NodeName = node
		return p
	}
	mustCreate(t, s, onNode("n1", "early")) // before the watch, replayed from the ring
	first, err := s.List(ctx, Prefix("pods", ""), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startRV := strconv.FormatInt(rvOf(t, first)-1, 10)
	watchNode := func(node string) watch.Interface {
		w, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{
			ResourceVersion: startRV,
			IndexValue:      node,
			Predicate:       func(obj runtime.Object) bool { return nodeOf(obj) == node },
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	n1, n2 := watchNode("n1"), watchNode("n2")
	all, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: startRV})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Stop()
	expectEvent(t, n1, watch.Added, "early")
	expectEvent(t, all, watch.Added, "early")

	mustCreate(t, s, onNode("n2", "a"))
	mustCreate(t, s, onNode("n1", "b"))
	// b moves from n1 to n2: n1 sees it leave, n2 sees it arrive.
	mustUpdate(t, s, Key("pods", "default", "b"), func(p *corev1.Pod) { p.Spec.NodeName = "n2" })
	mustDelete(t, s, Key("pods", "default", "a"))
	mustCreate(t, s, onNode("n1", "fence"))

	expectEvent(t, n1, watch.Added, "b")
	expectEvent(t, n1, watch.Deleted, "b")
	expectEvent(t, n1, watch.Added, "fence")
	expectEvent(t, n2, watch.Added, "a")
	expectEvent(t, n2, watch.Added, "b")
	expectEvent(t, n2, watch.Deleted, "a")
	expectEvent(t, all, watch.Added, "a")
	expectEvent(t, all, watch.Added, "b")
	expectEvent(t, all, watch.Modified, "b")
	expectEvent(t, all, watch.Deleted, "a")
	expectEvent(t, all, watch.Added, "fence")

	// Indexed watchers were queued only their own node's events.
	c := s.(*store).cacher
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byIndex["n1"]) != 1 || len(c.byIndex["n2"]) != 1 || len(c.unindexed) != 1 {
		t.Fatalf("watchers filed as n1:%d n2:%d unindexed:%d, want 1 each", len(c.byIndex["n1"]), len(c.byIndex["n2"]), len(c.unindexed))
	}
	// Of the 6 writes, n1 was handed early, b's creation and move and the fence; n2 a's
	// creation and deletion and b's move; the unindexed watcher all 6.
	for w := range c.watchers {
		want := map[string]int{"n1": 4, "n2": 3, "": 6}[w.indexValue]
		if w.queued != want {
			t.Errorf("watcher %q was handed %d events, want %d", w.indexValue, w.queued, want)
		}
	}
}
