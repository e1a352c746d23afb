package storage

import (
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// codec turns one resource's typed objects into the bytes stored in etcd and back.
// Stored bytes are the object's Kubernetes JSON with apiVersion and kind and without
// resourceVersion (the revision is etcd's ModRevision, never part of the value), so an
// unchanged object encodes to identical bytes and an update can be skipped.
type codec struct {
	newFunc func() runtime.Object
	gvk     schema.GroupVersionKind // filled in when the object carries none
	t       Transformer             // nil: stored as encoded
}

func newCodec(newFunc func() runtime.Object) *codec {
	c := &codec{newFunc: newFunc}
	if kinds, _, err := scheme.Scheme.ObjectKinds(newFunc()); err == nil && len(kinds) > 0 {
		c.gvk = kinds[0]
	}
	return c
}

// encode prepares obj for storage in place (clears its resourceVersion, sets apiVersion
// and kind when empty) and returns its JSON.
func (c *codec) encode(obj runtime.Object) ([]byte, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("storage: object %T has no metadata: %w", obj, err)
	}
	acc.SetResourceVersion("")
	if obj.GetObjectKind().GroupVersionKind().Empty() && !c.gvk.Empty() {
		obj.GetObjectKind().SetGroupVersionKind(c.gvk)
	}
	data, err := json.Marshal(obj)
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
// is stale (see Transformer).
func (c *codec) decodeStored(key string, data []byte, rev int64) (runtime.Object, []byte, bool, error) {
	plain, stale, err := c.open(key, data)
	if err != nil {
		return nil, nil, false, err
	}
	obj, err := c.decodePlain(key, plain, rev)
	return obj, plain, stale, err
}

func (c *codec) decodePlain(key string, data []byte, rev int64) (runtime.Object, error) {
	obj := c.newFunc()
	if err := json.Unmarshal(data, obj); err != nil {
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
