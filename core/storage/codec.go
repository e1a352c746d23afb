package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// protobufPrefix starts every protobuf value, as upstream's storage writes it (the
// "k8s\x00" magic of k8s.io/apimachinery's protobuf serializer, then a runtime.Unknown
// carrying apiVersion, kind and the object's bytes). A JSON value starts with '{', so the
// two never collide and a data dir written in JSON stays readable.
var protobufPrefix = []byte("k8s\x00")

// storageProto is upstream's protobuf serializer (k8s.io/apimachinery), the one
// kube-apiserver stores with; the scheme is client-go's, which holds exactly the
// k8s.io/api types.
var storageProto = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// codec turns one resource's typed objects into the bytes stored in etcd and back.
// Built-in types (those of k8s.io/api, registered in client-go's scheme and generated
// with protobuf marshalling) are stored as protobuf, as upstream stores them; every other
// type (custom resources, our own records without protobuf) as Kubernetes JSON with
// apiVersion and kind. Either way the stored value carries no resourceVersion (the
// revision is etcd's ModRevision, never part of the value), so an unchanged object encodes
// to identical bytes and an update can be skipped. Decoding accepts both encodings, so a
// data dir written in JSON by an earlier build keeps working; its objects turn into
// protobuf when they are next written. docs/storage.md says why.
type codec struct {
	newFunc func() runtime.Object
	gvk     schema.GroupVersionKind // filled in when the object carries none
	t       Transformer             // nil: stored as encoded
	proto   bool                    // encode as protobuf (false: JSON)
}

// protoMarshaler is what apimachinery's protobuf serializer needs of an object: the
// generated Marshal/Unmarshal of k8s.io/api types.
type protoMarshaler interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func newCodec(newFunc func() runtime.Object, legacyJSON bool) *codec {
	obj := newFunc()
	c := &codec{newFunc: newFunc}
	if kinds, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(kinds) > 0 {
		c.gvk = kinds[0]
		_, isProto := obj.(protoMarshaler)
		c.proto = isProto && !legacyJSON
	}
	return c
}

// encode prepares obj for storage in place (clears its resourceVersion, sets apiVersion
// and kind when empty) and returns its stored form (before any Transformer).
func (c *codec) encode(obj runtime.Object) ([]byte, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("storage: object %T has no metadata: %w", obj, err)
	}
	acc.SetResourceVersion("")
	if obj.GetObjectKind().GroupVersionKind().Empty() && !c.gvk.Empty() {
		obj.GetObjectKind().SetGroupVersionKind(c.gvk)
	}
	var data []byte
	if c.proto {
		var buf bytes.Buffer
		err = storageProto.Encode(obj, &buf)
		data = buf.Bytes()
	} else if u, ok := obj.(*unstructured.Unstructured); ok {
		// The same bytes as json.Marshal(u), without re-validating and compacting what
		// Unstructured's MarshalJSON wrote (a fifth of a custom object's encode).
		data, err = json.Marshal(u.Object)
	} else {
		data, err = json.Marshal(obj)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: encode %T %s/%s: %w", obj, acc.GetNamespace(), acc.GetName(), err)
	}
	return data, nil
}

// decode returns a new object from stored data with resourceVersion rev.
func (c *codec) decode(key string, data []byte, rev int64) (runtime.Object, error) {
	obj, _, _, err := c.decodeStored(key, data, rev)
	return obj, err
}

// decodeStored is decode that also returns the plain bytes and whether the stored form
// is stale (see Transformer). A value in the other encoding than the codec writes (JSON
// from an earlier build) yields the bytes the codec would write for it now, so that an
// update that changes nothing is still recognised as a no-op.
func (c *codec) decodeStored(key string, data []byte, rev int64) (runtime.Object, []byte, bool, error) {
	plain, stale, err := c.open(key, data)
	if err != nil {
		return nil, nil, false, err
	}
	obj, err := c.decodePlain(key, plain, rev)
	if err != nil {
		return nil, nil, false, err
	}
	if c.proto != bytes.HasPrefix(plain, protobufPrefix) {
		if plain, err = c.encode(obj.DeepCopyObject()); err != nil {
			return nil, nil, false, err
		}
	}
	return obj, plain, stale, nil
}

func (c *codec) decodePlain(key string, data []byte, rev int64) (runtime.Object, error) {
	obj := c.newFunc()
	if err := decodeValue(data, obj); err != nil {
		return nil, fmt.Errorf("storage: decode %s at revision %d: %w", key, rev, err)
	}
	if obj.GetObjectKind().GroupVersionKind().Empty() && !c.gvk.Empty() {
		obj.GetObjectKind().SetGroupVersionKind(c.gvk)
	}
	if err := setRV(obj, rev); err != nil {
		return nil, err
	}
	return obj, nil
}

// decodeValue decodes a plain stored value, protobuf or JSON, into obj.
func decodeValue(data []byte, obj runtime.Object) error {
	if !bytes.HasPrefix(data, protobufPrefix) {
		return json.Unmarshal(data, obj)
	}
	out, gvk, err := storageProto.Decode(data, nil, obj)
	if err != nil {
		return err
	}
	if out != obj {
		return fmt.Errorf("stored %s does not decode into %T", gvk, obj)
	}
	return nil
}

// DecodeValue decodes a value as this package stores it in etcd (protobuf with the
// "k8s\x00" prefix, or JSON), not encrypted, into obj: for tools and tests that read
// etcd directly.
func DecodeValue(data []byte, obj runtime.Object) error { return decodeValue(data, obj) }

func setRV(obj runtime.Object, rev int64) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("storage: object %T has no metadata: %w", obj, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}

// parseRV parses a resourceVersion; "" and "0" mean "newest" and yield 0.
func parseRV(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: resourceVersion %q is not a non-negative integer", ErrInvalid, rv)
	}
	return n, nil
}
