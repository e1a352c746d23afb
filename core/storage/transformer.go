package storage

import "fmt"

// Transformer turns an object's encoded bytes into what is stored in etcd and back:
// encryption at rest (core/apiserver/encryption). key is the object's etcd key; a
// transformer that authenticates it (AES-GCM's additional data, as upstream) makes a
// value copied under another key unreadable.
type Transformer interface {
	// TransformToStorage returns the value to write for plain.
	TransformToStorage(key string, plain []byte) ([]byte, error)
	// TransformFromStorage returns the plain bytes of a stored value. stale reports a
	// value not in the form TransformToStorage writes now (unencrypted, or under a key
	// that is no longer the first): an update rewrites it even when the object did not
	// change, so reading and replacing every object completes a key rotation.
	TransformFromStorage(key string, data []byte) (plain []byte, stale bool, err error)
}

// WithTransformer stores the resource's objects through t (every store of the
// resource and its watch cache). The first store of a resource to pass it sets the
// watch cache's.
func WithTransformer(t Transformer) ResourceOption {
	return func(s *store) {
		s.codec.t = t
		s.cacher.mu.Lock()
		defer s.cacher.mu.Unlock()
		if s.cacher.codec.t == nil {
			s.cacher.codec.t = t
		}
	}
}

// seal returns the stored form of plain.
func (c *codec) seal(key string, plain []byte) ([]byte, error) {
	if c.t == nil {
		return plain, nil
	}
	out, err := c.t.TransformToStorage(key, plain)
	if err != nil {
		return nil, fmt.Errorf("storage: transform %s for storage: %w", key, err)
	}
	return out, nil
}

// open returns the plain form of a stored value.
func (c *codec) open(key string, data []byte) ([]byte, bool, error) {
	if c.t == nil {
		return data, false, nil
	}
	plain, stale, err := c.t.TransformFromStorage(key, data)
	if err != nil {
		return nil, false, fmt.Errorf("storage: read %s from storage: %w", key, err)
	}
	return plain, stale, nil
}
