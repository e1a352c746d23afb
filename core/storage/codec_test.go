package storage

import (
	"bytes"
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func rawGet(t *testing.T, b *Backend, key string) []byte {
	t.Helper()
	resp, err := b.Client().Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get %s: %v (%d values)", key, err, len(resp.Kvs))
	}
	return resp.Kvs[0].Value
}

// TestUpgradeJSONDataDir: a data dir written in JSON (the codec of builds before protobuf
// storage) is read by the protobuf codec: Get, List and Watch see every object, an update
// that changes nothing stays a no-op (same resourceVersion, value still JSON), and the
// next real write stores protobuf.
func TestUpgradeJSONDataDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := openBackend(t, Config{DataDir: dir, legacyJSON: true})
	olds := podStore(old)
	a := mustCreate(t, olds, newPod("ns1", "a", map[string]string{"app": "web"}))
	mustCreate(t, olds, newPod("ns1", "b", nil))
	if raw := rawGet(t, old, Key("pods", "ns1", "a")); raw[0] != '{' {
		t.Fatalf("the legacy codec did not write JSON: %q", raw)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	b := openBackend(t, Config{DataDir: dir})
	s := podStore(b)
	got, err := s.Get(ctx, Key("pods", "ns1", "a"))
	if err != nil {
		t.Fatalf("get a JSON pod with the protobuf codec: %v", err)
	}
	p := got.(*corev1.Pod)
	if p.Labels["app"] != "web" || p.UID != a.UID || p.ResourceVersion != a.ResourceVersion || p.Kind != "Pod" {
		t.Fatalf("pod read back: labels %v uid %q rv %q kind %q; want app=web, %q, %q, Pod", p.Labels, p.UID, p.ResourceVersion, p.Kind, a.UID, a.ResourceVersion)
	}
	list, err := s.List(ctx, Prefix("pods", "ns1"), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := names(list); len(n) != 2 || n[0] != "a" || n[1] != "b" {
		t.Fatalf("list = %v, want [a b]", n)
	}
	w, err := s.Watch(ctx, Prefix("pods", "ns1"), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for range 2 {
		if ev := nextEvent(t, w); ev.Type != watch.Added {
			t.Fatalf("initial watch event %s, want ADDED", ev.Type)
		}
	}

	// No change: no write, as with a value the current codec wrote.
	out, err := s.GuaranteedUpdate(ctx, Key("pods", "ns1", "a"), nil, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	if err != nil {
		t.Fatal(err)
	}
	if rv := out.(*corev1.Pod).ResourceVersion; rv != a.ResourceVersion {
		t.Errorf("an unchanged update of a JSON value wrote it: resourceVersion %s -> %s", a.ResourceVersion, rv)
	}
	if raw := rawGet(t, b, Key("pods", "ns1", "a")); raw[0] != '{' {
		t.Errorf("an unchanged update rewrote the value: %q", raw)
	}
	// A change: stored as protobuf, and the watch sees it decoded.
	mustUpdate(t, s, Key("pods", "ns1", "a"), func(p *corev1.Pod) { p.Labels["app"] = "api" })
	if raw := rawGet(t, b, Key("pods", "ns1", "a")); !bytes.HasPrefix(raw, protobufPrefix) {
		t.Errorf("an update did not store protobuf: %q", raw)
	}
	if p := expectEvent(t, w, watch.Modified, "a"); p.Labels["app"] != "api" {
		t.Errorf("watched update: labels %v", p.Labels)
	}
	got, err = s.Get(ctx, Key("pods", "ns1", "a"))
	if err != nil || got.(*corev1.Pod).Labels["app"] != "api" {
		t.Fatalf("get after the protobuf write: %v %v", got, err)
	}
}

// TestTypesWithoutProtobufStayJSON: objects whose type is not a k8s.io/api type (custom
// resources as unstructured objects) are stored as JSON and read back.
func TestTypesWithoutProtobufStayJSON(t *testing.T) {
	ctx := context.Background()
	b := embeddedFactory(t, Config{})
	newWidget := func() runtime.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Widget")
		return u
	}
	s := b.ForResource("example.com/widgets", newWidget, func() runtime.Object { return &unstructured.UnstructuredList{} })
	w := newWidget().(*unstructured.Unstructured)
	w.SetNamespace("ns1")
	w.SetName("w1")
	w.Object["spec"] = map[string]any{"size": int64(3)}
	key := Key("example.com/widgets", "ns1", "w1")
	if _, err := s.Create(ctx, key, w); err != nil {
		t.Fatalf("create widget: %v", err)
	}
	if raw := rawGet(t, b, key); raw[0] != '{' || !bytes.Contains(raw, []byte(`"kind":"Widget"`)) {
		t.Fatalf("custom resource not stored as JSON: %q", raw)
	}
	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.(*unstructured.Unstructured).Object, "spec", "size"); size != 3 {
		t.Errorf("widget read back: %v", got)
	}
}

// TestCodecEncodesEachBuiltinAsProtobuf: the codec picks protobuf for k8s.io/api types
// and JSON for the rest, and round-trips a pod through the stored form.
func TestCodecEncodesEachBuiltinAsProtobuf(t *testing.T) {
	for _, tc := range []struct {
		obj   runtime.Object
		proto bool
	}{
		{&corev1.Pod{}, true},
		{&corev1.Secret{}, true},
		{&unstructured.Unstructured{}, false},
	} {
		obj := tc.obj
		if c := newCodec(func() runtime.Object { return obj.DeepCopyObject() }, false); c.proto != tc.proto {
			t.Errorf("%T: protobuf %v, want %v", obj, c.proto, tc.proto)
		}
		if c := newCodec(func() runtime.Object { return obj.DeepCopyObject() }, true); c.proto {
			t.Errorf("%T: protobuf with the legacy JSON codec", obj)
		}
	}
	c := newCodec(func() runtime.Object { return &corev1.Pod{} }, false)
	p := newPod("ns1", "a", map[string]string{"k": "v"})
	p.ResourceVersion = "7"
	data, err := c.encode(p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.decode("/registry/pods/ns1/a", data, 9)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if got.Name != "a" || got.Labels["k"] != "v" || got.ResourceVersion != "9" || got.APIVersion != "v1" || got.Spec.Containers[0].Image != "busybox" {
		t.Errorf("round trip: %+v", got)
	}
	if _, err := c.decode("/registry/pods/ns1/a", []byte("k8s\x00garbage"), 9); err == nil {
		t.Error("a corrupt protobuf value decoded without error")
	}
}
