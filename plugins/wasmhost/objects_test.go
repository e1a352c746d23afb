package wasmhost

import (
	"bytes"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// Objects are marshalled once per version: a new resourceVersion is marshalled again,
// objects without UID or resourceVersion every time.
func TestObjectCacheMarshalsOncePerVersion(t *testing.T) {
	var c ObjectCache
	marshals := 0
	get := func(uid, rv, name string) []byte {
		meta := &metav1.ObjectMeta{UID: k8stypes.UID(uid), ResourceVersion: rv, Name: name}
		return c.Get(meta, func() []byte { marshals++; return []byte(name) })
	}
	get("1", "5", "a")
	if b := get("1", "5", "changed-but-same-version"); string(b) != "a" || marshals != 1 {
		t.Errorf("same version: %q after %d marshals, want the cached a after 1", b, marshals)
	}
	if b := get("1", "6", "b"); string(b) != "b" || marshals != 2 {
		t.Errorf("new version: %q after %d marshals", b, marshals)
	}
	get("", "6", "x")
	get("", "6", "x")
	if marshals != 4 {
		t.Errorf("objects without UID: %d marshals, want 4", marshals)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u", ResourceVersion: "1"}}
	if js := c.Pod(pod); !bytes.Contains(js, []byte(`"kind":"Pod","apiVersion":"v1"`)) {
		t.Errorf("pod JSON %s lacks its type", js)
	}
}
