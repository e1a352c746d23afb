package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// TestSharedEncodingsEncodeOncePerEncoder: watchers with SharedEncodings receive one
// CachingObject per event, and an encoder runs once for all of them; a watcher
// without the option gets the plain object.
func TestSharedEncodingsEncodeOncePerEncoder(t *testing.T) {
	ctx := context.Background()
	s := podStore(embeddedFactory(t, Config{}))
	base := mustCreate(t, s, newPod("ns1", "a", nil))
	var ws []watch.Interface
	for _, shared := range []bool{true, true, true, false} {
		w, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: base.ResourceVersion, SharedEncodings: shared})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	mustUpdate(t, s, Key("pods", "ns1", "a"), func(p *corev1.Pod) { p.Labels = map[string]string{"v": "2"} })

	calls := map[runtime.Identifier]int{}
	encodeAs := func(id runtime.Identifier) func(runtime.Object, io.Writer) error {
		return func(obj runtime.Object, w io.Writer) error {
			calls[id]++
			return json.NewEncoder(w).Encode(obj)
		}
	}
	var first *CachingObject
	var out [][]byte
	for i, w := range ws[:3] {
		ev := nextEvent(t, w)
		co, ok := ev.Object.(*CachingObject)
		if !ok || ev.Type != watch.Modified {
			t.Fatalf("watcher %d: %s event with %T, want MODIFIED with *CachingObject", i, ev.Type, ev.Object)
		}
		if first == nil {
			first = co
		} else if co != first {
			t.Fatalf("watcher %d got a CachingObject of its own", i)
		}
		if p := co.GetObject().(*corev1.Pod); p.Labels["v"] != "2" {
			t.Fatalf("watcher %d: object labels %v", i, p.Labels)
		}
		for _, id := range []runtime.Identifier{"json-a", "json-b"} {
			var buf bytes.Buffer
			if err := co.CacheEncode(id, encodeAs(id), &buf); err != nil {
				t.Fatal(err)
			}
			out = append(out, buf.Bytes())
		}
	}
	if calls["json-a"] != 1 || calls["json-b"] != 1 {
		t.Errorf("encoder calls for three watchers: %v, want one per encoder", calls)
	}
	for i := range out {
		if !bytes.Equal(out[i], out[0]) || !bytes.Contains(out[i], []byte(`"v":"2"`)) {
			t.Errorf("encoding %d = %s", i, out[i])
		}
	}
	if ev := nextEvent(t, ws[3]); ev.Type != watch.Modified {
		t.Fatalf("plain watcher: %s", ev.Type)
	} else if _, ok := ev.Object.(*corev1.Pod); !ok {
		t.Errorf("a watcher without SharedEncodings got %T", ev.Object)
	}
}
