package storage

import (
	"bytes"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CachingObject is the object of a watch event as watchers with
// WatchOptions.SharedEncodings receive it: the decoded object, shared by every watcher
// of the event, together with its serialized forms, each computed once, by whichever
// watcher asks first, and then copied by the others. It implements
// runtime.CacheableObject, as upstream's watch cache objects do, so apimachinery's
// serializers use the cache on their own. The object is read-only.
type CachingObject struct {
	obj runtime.Object

	mu  sync.Mutex
	enc map[runtime.Identifier]*cachedEncoding
}

type cachedEncoding struct {
	once sync.Once
	data []byte
	err  error
}

func newCachingObject(obj runtime.Object) *CachingObject {
	return &CachingObject{obj: obj, enc: map[runtime.Identifier]*cachedEncoding{}}
}

// CacheEncode writes to w what encode writes for the object, calling encode only the
// first time an encoder with identifier id asks (runtime.CacheableObject).
func (o *CachingObject) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	o.mu.Lock()
	e := o.enc[id]
	if e == nil {
		e = &cachedEncoding{}
		o.enc[id] = e
	}
	o.mu.Unlock()
	e.once.Do(func() {
		var buf bytes.Buffer
		e.err = encode(o.obj, &buf)
		e.data = buf.Bytes()
	})
	if e.err != nil {
		return e.err
	}
	_, err := w.Write(e.data)
	return err
}

// GetObject returns the shared object itself (not a copy, unlike upstream's): treat it
// as read-only.
func (o *CachingObject) GetObject() runtime.Object { return o.obj }

// GetObjectKind implements runtime.Object.
func (o *CachingObject) GetObjectKind() schema.ObjectKind { return o.obj.GetObjectKind() }

// DeepCopyObject returns a copy of the object, without the cache.
func (o *CachingObject) DeepCopyObject() runtime.Object { return o.obj.DeepCopyObject() }

// caching returns the CachingObject of obj, which must be e's object or previous
// state, made once per event.
func (e *event) caching(obj runtime.Object) runtime.Object {
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	switch obj {
	case e.obj:
		if e.objC == nil {
			e.objC = newCachingObject(obj)
		}
		return e.objC
	case e.prev:
		if e.prevC == nil {
			e.prevC = newCachingObject(obj)
		}
		return e.prevC
	}
	return obj
}
