package handlers

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// countingObject is a runtime.CacheableObject that counts how often it is encoded.
type countingObject struct {
	runtime.Object
	cache map[runtime.Identifier][]byte
	calls int
}

func (c *countingObject) CacheEncode(id runtime.Identifier, enc func(runtime.Object, io.Writer) error, w io.Writer) error {
	if b, ok := c.cache[id]; ok {
		_, err := w.Write(b)
		return err
	}
	c.calls++
	var buf bytes.Buffer
	if err := enc(c.Object, &buf); err != nil {
		return err
	}
	c.cache[id] = buf.Bytes()
	_, err := w.Write(buf.Bytes())
	return err
}
func (c *countingObject) GetObject() runtime.Object { return c.Object }

func TestWatchEncoderForms(t *testing.T) {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "5", Labels: map[string]string{"x": "<y>"}}}

	// JSON: byte for byte what encoding/json wrote for the event before.
	var want bytes.Buffer
	_ = json.NewEncoder(&want).Encode(watchEvent{Type: watch.Added, Object: pod})
	co := &countingObject{Object: pod, cache: map[runtime.Identifier][]byte{}}
	var got bytes.Buffer
	for range 2 {
		got.Reset()
		if err := newWatchEncoder(&got, false).encode(watch.Added, co); err != nil {
			t.Fatal(err)
		}
	}
	if got.String() != want.String() {
		t.Errorf("JSON event\n got %s\nwant %s", got.String(), want.String())
	}

	// Protobuf: what client-go's streaming decoder reads.
	var pb bytes.Buffer
	enc := newWatchEncoder(&pb, true)
	for range 2 {
		if err := enc.encode(watch.Modified, co); err != nil {
			t.Fatal(err)
		}
	}
	if co.calls != 2 {
		t.Errorf("object encoded %d times for two JSON and two protobuf events, want once per content type", co.calls)
	}
	dec := streaming.NewDecoder(protobuf.LengthDelimitedFramer.NewFrameReader(io.NopCloser(&pb)), protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme))
	for i := range 2 {
		var ev metav1.WatchEvent
		if _, _, err := dec.Decode(nil, &ev); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		var p corev1.Pod
		if _, _, err := protoSerializer.Decode(ev.Object.Raw, nil, &p); err != nil {
			t.Fatalf("frame %d object: %v", i, err)
		}
		if ev.Type != "MODIFIED" || p.Name != "a" || p.Labels["x"] != "<y>" || p.ResourceVersion != "5" {
			t.Errorf("frame %d: %s %+v", i, ev.Type, p.ObjectMeta)
		}
	}
	if err := newWatchEncoder(io.Discard, true).encode(watch.Added, map[string]string{}); err == nil {
		t.Error("a non-object encoded as protobuf")
	}
}

func TestProtobufOnlyForBuiltinTypes(t *testing.T) {
	if !protobufCapable(&registry.Resource{NewFunc: func() runtime.Object { return &corev1.Pod{} }}) {
		t.Error("pods are not served as protobuf")
	}
	if protobufCapable(&registry.Resource{NewFunc: func() runtime.Object { return &unstructured.Unstructured{} }}) {
		t.Error("custom resources would be served as protobuf")
	}
}
