package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// While etcd has no quorum (two of three members stopped), reads with resourceVersion=0
// or "not older than" a version the cache has reached are served from the watch cache
// (get, list and watch), and a quorum read fails before the request's timeout with a 503
// that says why. Once quorum returns, quorum reads and writes work again.
func TestReadsFromWatchCacheWithoutQuorum(t *testing.T) {
	etcd := apiservertest.StartEtcd(t, 3)
	srv := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(etcd.Endpoints()...))
	ctx := context.Background()
	cms := srv.Client.CoreV1().ConfigMaps("default")
	var last string
	for _, name := range []string{"a", "b", "c"} {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last = cm.ResourceVersion
	}
	// The cache has seen the last write before quorum goes.
	if _, err := cms.Get(ctx, "c", metav1.GetOptions{ResourceVersion: last}); err != nil {
		t.Fatal(err)
	}
	lead := etcd.Leader()
	for i := range 3 {
		if i != lead {
			etcd.StopMember(i) // the leader stays up alone, without quorum
		}
	}

	got, err := cms.Get(ctx, "b", metav1.GetOptions{ResourceVersion: "0"})
	if err != nil || got.Data["k"] != "b" {
		t.Fatalf("get rv=0 without quorum: %v %v", err, got)
	}
	if _, err := cms.Get(ctx, "c", metav1.GetOptions{ResourceVersion: last}); err != nil {
		t.Fatalf("get not older than %s without quorum: %v", last, err)
	}
	if _, err := cms.Get(ctx, "nope", metav1.GetOptions{ResourceVersion: "0"}); !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing object rv=0 without quorum: %v, want 404", err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	if err != nil || len(list.Items) < 3 {
		t.Fatalf("list rv=0 without quorum: %v (%d items)", err, len(list.Items))
	}
	if _, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: last, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); err != nil {
		t.Fatalf("list not older than %s without quorum: %v", last, err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("watch rv=0 without quorum: %v", err)
	}
	added := 0
	for added < 3 {
		ev, ok := <-w.ResultChan()
		if !ok || ev.Type != watch.Added {
			t.Fatalf("watch rv=0 without quorum: %v %v after %d ADDED", ok, ev.Type, added)
		}
		added++
	}
	w.Stop()

	// A quorum read ends before the client's timeout, with the reason.
	code, st := rawRequest(t, srv, http.MethodGet, "/api/v1/namespaces/default/configmaps/a?timeout=4s", "", nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(st.Message, "quorum") || !strings.Contains(st.Message, "resourceVersion=0") {
		t.Fatalf("quorum get without quorum: %d %q, want 503 naming quorum and the cached reads", code, st.Message)
	}
	code, st = rawRequest(t, srv, http.MethodGet, "/api/v1/namespaces/default/configmaps?timeout=4s", "", nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(st.Message, "quorum") {
		t.Fatalf("quorum list without quorum: %d %q, want 503 naming quorum", code, st.Message)
	}

	for i := range 3 {
		if i != lead {
			etcd.StartMember(i)
		}
	}
	var cur *corev1.ConfigMap
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		cur, err = cms.Get(ctx, "a", metav1.GetOptions{})
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("quorum read after quorum returned: %v", err)
	}
	cur.Data["k"] = "a2"
	if _, err := cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write after quorum returned: %v", err)
	}
}
