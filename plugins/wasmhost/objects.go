package wasmhost

import (
	"encoding/json"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxCachedObjects bounds the JSON cache; when it is full the cache starts over (cheap,
// and a scheduler's working set of nodes and pending pods is far smaller).
const maxCachedObjects = 50000

// ObjectCache holds objects serialized as Kubernetes JSON, keyed by UID and
// resourceVersion, so that an object is marshalled once per version however many plugins
// and calls read it. Objects without both (hand-built in tests) are marshalled every time.
type ObjectCache struct {
	mu sync.RWMutex
	m  map[objectKey][]byte
}

type objectKey struct {
	uid types.UID
	rv  string
}

// Get returns the JSON of the object whose metadata is meta, marshalling it with marshal
// on the first request for its version.
func (c *ObjectCache) Get(meta *metav1.ObjectMeta, marshal func() []byte) []byte {
	if meta.UID == "" || meta.ResourceVersion == "" {
		return marshal()
	}
	k := objectKey{meta.UID, meta.ResourceVersion}
	c.mu.RLock()
	b, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return b
	}
	b = marshal()
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedObjects {
		c.m = make(map[objectKey][]byte)
	}
	c.m[k] = b
	c.mu.Unlock()
	return b
}

// Pod returns the pod as Kubernetes JSON.
func (c *ObjectCache) Pod(p *v1.Pod) []byte {
	return c.Get(&p.ObjectMeta, func() []byte {
		cp := *p
		cp.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		return MustJSON(&cp)
	})
}

// Node returns the node as Kubernetes JSON.
func (c *ObjectCache) Node(n *v1.Node) []byte {
	return c.Get(&n.ObjectMeta, func() []byte {
		cp := *n
		cp.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
		return MustJSON(&cp)
	})
}

func (c *ObjectCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// MustJSON marshals a typed API object; those always marshal.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("wasmhost: marshal API object: " + err.Error())
	}
	return b
}
