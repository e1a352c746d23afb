package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/wasmkube/wasmkube/core/apiserver/crd"
	"github.com/wasmkube/wasmkube/core/storage"
)

// customReads is the per-store memo of served custom objects, by etcd key.
type customReads struct {
	mu sync.RWMutex
	m  map[string]*CustomRead
}

// CustomRead is one custom object as a store serves it at one revision.
type CustomRead struct {
	Rev  int64
	Obj  *unstructured.Unstructured // ForRead applied, resourceVersion set; never modified
	JSON []byte                     // obj encoded
}

func NewCustomReads() *customReads { return &customReads{m: map[string]*CustomRead{}} }

// Read returns the served form of the value stored at key with revision rev, decoding and
// normalizing it unless this revision was served before.
func (c *customReads) Read(v *crd.Version, key string, value []byte, rev int64) (*CustomRead, error) {
	c.mu.RLock()
	r := c.m[key]
	c.mu.RUnlock()
	if r != nil && r.Rev == rev {
		return r, nil
	}
	u := &unstructured.Unstructured{}
	var err error
	if bytes.HasPrefix(value, []byte("{")) {
		err = u.UnmarshalJSON(value)
	} else {
		err = storage.DecodeValue(value, u)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(errors.New("decode " + key + " at revision " + strconv.FormatInt(rev, 10) + ": " + err.Error()))
	}
	u.SetResourceVersion(strconv.FormatInt(rev, 10))
	v.ForRead(u)
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nil, apierrors.NewInternalError(errors.New("encode " + key + ": " + err.Error()))
	}
	nr := &CustomRead{Rev: rev, Obj: u, JSON: b}
	c.mu.Lock()
	// A list at an older revision does not replace a newer object.
	if cur := c.m[key]; cur == nil || cur.Rev < rev {
		c.m[key] = nr
	}
	c.mu.Unlock()
	return nr, nil
}

// Keep records r as the served form of key unless a newer revision is kept already.
func (c *customReads) Keep(key string, r *CustomRead) {
	c.mu.Lock()
	if cur := c.m[key]; cur == nil || cur.Rev < r.Rev {
		c.m[key] = r
	}
	c.mu.Unlock()
}

// Forget drops the kept objects under prefix with keys from lo to hi (inclusive; "" is
// open) that a list of that range did not see: they were deleted. Dropping is always
// safe (the next list decodes them again), so a list at an old revision may drop too much
// but never keeps a deleted object.
func (c *customReads) Forget(prefix, lo, hi string, seen map[string]struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if !strings.HasPrefix(k, prefix) || lo != "" && k < lo || hi != "" && k > hi {
			continue
		}
		if _, ok := seen[k]; !ok {
			delete(c.m, k)
		}
	}
}
