package storage

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// xorTransformer "encrypts" by xor with a one-byte key behind a prefix naming it;
// values under another prefix (or none) are stale, and plain ones are read as they are.
type xorTransformer struct{ key byte }

func (x xorTransformer) prefix() []byte { return []byte{'x', x.key, ':'} }

func (x xorTransformer) TransformToStorage(key string, plain []byte) ([]byte, error) {
	out := append([]byte(nil), x.prefix()...)
	for _, b := range plain {
		out = append(out, b^x.key)
	}
	return out, nil
}

func (x xorTransformer) TransformFromStorage(key string, data []byte) ([]byte, bool, error) {
	if len(data) < 3 || data[0] != 'x' || data[2] != ':' {
		return data, true, nil // unencrypted
	}
	if data[1] != x.key && data[1] != x.key-1 { // the previous key still reads
		return nil, false, errors.New("unknown key")
	}
	out := make([]byte, 0, len(data)-3)
	for _, b := range data[3:] {
		out = append(out, b^data[1])
	}
	return out, data[1] != x.key, nil
}

func rawValue(t *testing.T, b *Backend, key string) []byte {
	t.Helper()
	resp, err := b.Client().Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get %s: %v (%d values)", key, err, len(resp.Kvs))
	}
	return resp.Kvs[0].Value
}

func TestTransformerStoresAndRewritesStale(t *testing.T) {
	ctx := context.Background()
	b := embeddedFactory(t, Config{})
	newCM := func() runtime.Object { return &corev1.ConfigMap{} }
	newList := func() runtime.Object { return &corev1.ConfigMapList{} }
	plainStore := b.ForResource("configmaps", newCM, newList)
	key := Key("configmaps", "default", "old")
	// Written before encryption was turned on.
	if _, err := plainStore.Create(ctx, key, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default"}, Data: map[string]string{"k": "plaintext-value"}}); err != nil {
		t.Fatal(err)
	}
	enc := b.ForResource("configmaps", newCM, newList, WithTransformer(xorTransformer{key: 2}))
	w, err := enc.Watch(ctx, Prefix("configmaps", ""), WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// The old value reads; an update that changes nothing still rewrites it encrypted.
	obj, err := enc.Get(ctx, key)
	if err != nil {
		t.Fatalf("read unencrypted value: %v", err)
	}
	if obj.(*corev1.ConfigMap).Data["k"] != "plaintext-value" {
		t.Fatalf("read %v", obj)
	}
	rv := obj.(*corev1.ConfigMap).ResourceVersion
	out, err := enc.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	if err != nil {
		t.Fatal(err)
	}
	if out.(*corev1.ConfigMap).ResourceVersion == rv {
		t.Fatalf("unchanged update of a stale value was skipped (resourceVersion %s)", rv)
	}
	if raw := rawValue(t, b, key); bytes.Contains(raw, []byte("plaintext-value")) || raw[0] != 'x' || raw[1] != 2 {
		t.Fatalf("value not rewritten through the transformer: %q", raw)
	}
	// Now current: an unchanged update is skipped again.
	rv = out.(*corev1.ConfigMap).ResourceVersion
	out, err = enc.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	if err != nil || out.(*corev1.ConfigMap).ResourceVersion != rv {
		t.Fatalf("unchanged update of a current value wrote: %v, rv %s want %s", err, out.(*corev1.ConfigMap).ResourceVersion, rv)
	}

	// A new object is stored transformed; list, watch and delete decode it.
	key2 := Key("configmaps", "default", "new")
	if _, err := enc.Create(ctx, key2, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "default"}, Data: map[string]string{"k": "secret-value"}}); err != nil {
		t.Fatal(err)
	}
	if raw := rawValue(t, b, key2); bytes.Contains(raw, []byte("secret-value")) {
		t.Fatalf("stored in plain text: %q", raw)
	}
	list, err := enc.List(ctx, Prefix("configmaps", "default"), ListOptions{})
	if err != nil || len(list.(*corev1.ConfigMapList).Items) != 2 {
		t.Fatalf("list: %v %v", err, list)
	}
	deadline := time.After(30 * time.Second)
	for seen := false; !seen; {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Error {
				t.Fatalf("watch error: %v", ev.Object)
			}
			cm := ev.Object.(*corev1.ConfigMap)
			seen = cm.Name == "new" && cm.Data["k"] == "secret-value"
		case <-deadline:
			t.Fatal("watch did not deliver the transformed object decoded")
		}
	}
	if obj, err := enc.Delete(ctx, key2, nil); err != nil || obj.(*corev1.ConfigMap).Data["k"] != "secret-value" {
		t.Fatalf("delete: %v %v", err, obj)
	}

	// A value the transformer cannot read is an error naming the key.
	if _, err := b.Client().Put(ctx, key, "x\x09:garbage"); err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Get(ctx, key); err == nil || !bytes.Contains([]byte(err.Error()), []byte(key)) {
		t.Fatalf("unreadable value: got %v, want an error naming %s", err, key)
	}
}
