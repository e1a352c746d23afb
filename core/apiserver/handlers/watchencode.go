package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// watchEvent is the JSON wire form of a watch event.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// protobufWatchType is the Content-Type of a protobuf watch stream, as upstream's.
const protobufWatchType = protobufType + ";stream=watch"

// jsonEncoderID names our JSON object encoding in a storage.CachingObject's cache.
const jsonEncoderID runtime.Identifier = "wasmkube-watch-json"

// watchEncoder writes watch events as upstream does for the negotiated content type:
// JSON, one {"type","object"} document per line; or protobuf, each event a
// metav1.WatchEvent whose object holds the object's protobuf (the "k8s\x00" envelope),
// framed by a 4-byte big-endian length (apimachinery's LengthDelimitedFramer, which
// client-go's watch decoder reads). An object that is a runtime.CacheableObject (the
// watch cache's shared objects) is encoded once per content type for all watchers.
type watchEncoder struct {
	proto bool
	w     io.Writer
	frame io.Writer
	buf   bytes.Buffer
}

func newWatchEncoder(w io.Writer, proto bool) *watchEncoder {
	e := &watchEncoder{proto: proto, w: w}
	if proto {
		e.frame = protobuf.LengthDelimitedFramer.NewFrameWriter(w)
	}
	return e
}

func (e *watchEncoder) contentType() string {
	if e.proto {
		return protobufWatchType
	}
	return "application/json"
}

// encode writes one event. obj is a runtime.Object, or for JSON anything that
// marshals (a Table row set, say).
func (e *watchEncoder) encode(t watch.EventType, obj any) error {
	e.buf.Reset()
	if e.proto {
		ro, ok := obj.(runtime.Object)
		if !ok {
			return fmt.Errorf("watch: %T is not an API object and has no protobuf form", obj)
		}
		if err := encodeObject(ro, protoSerializer.Identifier(), protoSerializer.Encode, &e.buf); err != nil {
			return fmt.Errorf("watch: encode %T as protobuf: %w", obj, err)
		}
		ev := metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: e.buf.Bytes()}}
		data, err := ev.Marshal()
		if err != nil {
			return err
		}
		_, err = e.frame.Write(data)
		return err
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return json.NewEncoder(e.w).Encode(watchEvent{Type: t, Object: obj})
	}
	e.buf.WriteString(`{"type":`)
	tb, _ := json.Marshal(t)
	e.buf.Write(tb)
	e.buf.WriteString(`,"object":`)
	if err := encodeObject(ro, jsonEncoderID, encodeJSON, &e.buf); err != nil {
		return fmt.Errorf("watch: encode %T as JSON: %w", obj, err)
	}
	e.buf.WriteString("}\n")
	_, err := e.w.Write(e.buf.Bytes())
	return err
}

// encodeObject encodes obj with enc, through the object's cache when it has one.
func encodeObject(obj runtime.Object, id runtime.Identifier, enc func(runtime.Object, io.Writer) error, w io.Writer) error {
	if co, ok := obj.(runtime.CacheableObject); ok {
		return co.CacheEncode(id, enc, w)
	}
	return enc(obj, w)
}

// encodeJSON writes obj's JSON without a trailing newline, as encoding/json marshals it
// everywhere else in the server.
func encodeJSON(obj runtime.Object, w io.Writer) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// protobufCapable reports whether objects of res have a protobuf form: the k8s.io/api
// types (registered in client-go's scheme, with generated marshalling). Custom resources
// and our own types without protobuf are served as JSON whatever the client accepts, as
// upstream serves custom resources.
func protobufCapable(res *registry.Resource) bool {
	obj := res.NewFunc()
	if _, ok := obj.(interface{ Marshal() ([]byte, error) }); !ok {
		return false
	}
	_, _, err := scheme.Scheme.ObjectKinds(obj)
	return err == nil
}
