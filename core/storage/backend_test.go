package storage

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// TestRestartKeepsEverything closes a Backend and opens a new one on the same data dir:
// objects, their resourceVersions and the watch history survive.
func TestRestartKeepsEverything(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b1, err := NewBackend(ctx, Config{DataDir: dir, CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	s1 := podStore(b1)
	a := mustCreate(t, s1, newPod("default", "a", map[string]string{"k": "v"}))
	bPod := mustCreate(t, s1, newPod("default", "b", nil))
	if err := b1.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := b1.Ready(ctx); err == nil {
		t.Fatal("Ready succeeds after Close")
	}

	b2 := openBackend(t, Config{DataDir: dir})
	s2 := podStore(b2)
	got, err := s2.Get(ctx, Key("pods", "default", "a"))
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if p := got.(*corev1.Pod); p.ResourceVersion != a.ResourceVersion || p.Labels["k"] != "v" || p.UID != a.UID {
		t.Fatalf("after restart got rv %s labels %v uid %s; want rv %s labels %v uid %s", p.ResourceVersion, p.Labels, p.UID, a.ResourceVersion, a.Labels, a.UID)
	}
	// A client resuming its watch from before the restart gets what it missed.
	w, err := s2.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatalf("watch from a pre-restart rv: %v", err)
	}
	defer w.Stop()
	if p := expectEvent(t, w, watch.Added, "b"); p.ResourceVersion != bPod.ResourceVersion {
		t.Fatalf("replayed event rv %s, want %s", p.ResourceVersion, bPod.ResourceVersion)
	}
	mustCreate(t, s2, newPod("default", "c", nil))
	expectEvent(t, w, watch.Added, "c")
}

// TestDataDirInUse: a second Backend on a data dir in use fails at once with a clear
// error (etcd itself would wait forever for its database lock), and the dir is usable
// again after Close.
func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	b1, err := NewBackend(context.Background(), Config{DataDir: dir, CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if b2, err := NewBackend(ctx, Config{DataDir: dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		if b2 != nil {
			b2.Close()
		}
		t.Fatalf("second backend on %s: got %v, want an 'in use' error", dir, err)
	}
	b1.Close()
	b3 := openBackend(t, Config{DataDir: dir})
	if err := b3.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestManyEmbeddedInParallel(t *testing.T) {
	const n = 4
	var wg sync.WaitGroup
	backends := make([]*Backend, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			backends[i], errs[i] = NewBackend(context.Background(), Config{DataDir: t.TempDir(), CompactionInterval: -1})
		}()
	}
	wg.Wait()
	for i, b := range backends {
		if errs[i] != nil {
			t.Fatalf("backend %d: %v", i, errs[i])
		}
		defer b.Close()
	}
	// Each is its own store.
	for i, b := range backends {
		mustCreate(t, podStore(b), newPod("default", "only-in-"+string(rune('a'+i)), nil))
	}
	for i, b := range backends {
		out, err := podStore(b).List(context.Background(), Prefix("pods", ""), ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(out); len(got) != 1 || got[0] != "only-in-"+string(rune('a'+i)) {
			t.Fatalf("backend %d lists %v", i, got)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := NewBackend(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "DataDir") {
		t.Fatalf("NewBackend without DataDir or Endpoints: got %v, want an error naming DataDir", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := NewBackend(ctx, Config{Endpoints: []string{"http://127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("NewBackend to an unreachable etcd: got %v", err)
	}
}

func TestEncodeRejectsNonObjects(t *testing.T) {
	s := podStore(embeddedFactory(t, Config{}))
	_, err := s.Create(context.Background(), "/registry/pods/x", &runtime.Unknown{})
	if err == nil || !strings.Contains(err.Error(), "metadata") {
		t.Fatalf("create of an object without metadata: got %v", err)
	}
	if _, err := s.Watch(context.Background(), "/registry/nodes/", WatchOptions{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("watch outside the resource: got %v, want ErrInvalid", err)
	}
}

// TestRequestDurationMetric checks that operations show up on the default registry,
// which the API server's /metrics serves.
func TestRequestDurationMetric(t *testing.T) {
	b := embeddedFactory(t, Config{})
	s := b.ForResource("metrictests", func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} })
	before := samples(t, "metrictests")
	p := newPod("default", "a", nil)
	if _, err := s.Create(context.Background(), Key("metrictests", "default", "a"), p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(context.Background(), Key("metrictests", "default", "a")); err != nil {
		t.Fatal(err)
	}
	after := samples(t, "metrictests")
	if after["create"]-before["create"] != 1 || after["get"]-before["get"] != 1 {
		t.Fatalf("etcd_request_duration_seconds samples for metrictests went from %v to %v, want one more create and get", before, after)
	}
}

// samples returns the sample count of etcd_request_duration_seconds per operation for
// resource, from the default registry.
func samples(t *testing.T, resource string) map[string]uint64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "etcd_request_duration_seconds" {
			continue
		}
		for _, m := range f.Metric {
			if label(m, "type") == resource {
				counts[label(m, "operation")] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return counts
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
