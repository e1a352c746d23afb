package storage

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
)

// ResourceOption configures one resource's store in ForResource.
type ResourceOption func(*store)

// WithTTL makes objects of the resource expire ttl after their last write, as upstream
// does for events (one hour there): every create and update attaches the object to an
// etcd lease, and etcd deletes it (with a DELETED watch event) when the lease ends.
// Objects live between ttl and ttl+ttl/20 (at most one minute more), because writes
// close together share a lease instead of granting one each.
func WithTTL(ttl time.Duration) ResourceOption {
	return func(s *store) { s.ttl = ttl }
}

// WithWatchIndex gives the resource's watch cache an index, like upstream's trigger
// functions (pods by spec.nodeName): a watch with WatchOptions.IndexValue set is sent
// only the events of objects whose index value, before or after the change, equals it,
// so a thousand kubelets each watching their own pods do not each receive and filter
// every pod event. The first store of a resource to pass the option sets the index.
func WithWatchIndex(index func(obj runtime.Object) string) ResourceOption {
	return func(s *store) {
		s.cacher.mu.Lock()
		defer s.cacher.mu.Unlock()
		if s.cacher.index == nil {
			s.cacher.index = index
		}
	}
}

// leaseManager hands out shared leases: a lease granted for a TTL is reused by every
// write within a short window, so a burst of events costs one lease grant, not one per
// object.
type leaseManager struct {
	client *clientv3.Client
	mu     sync.Mutex
	leases map[time.Duration]grantedLease
}

type grantedLease struct {
	id      clientv3.LeaseID
	granted time.Time
}

func reuseWindow(ttl time.Duration) time.Duration {
	return min(ttl/20, time.Minute)
}

// get returns a lease that lasts at least ttl from now.
func (m *leaseManager) get(ctx context.Context, ttl time.Duration) (clientv3.LeaseID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	reuse := reuseWindow(ttl)
	if l, ok := m.leases[ttl]; ok && time.Since(l.granted) < reuse {
		return l.id, nil
	}
	seconds := int64((ttl + reuse + time.Second - 1) / time.Second)
	resp, err := m.client.Grant(ctx, seconds)
	if err != nil {
		return 0, fmt.Errorf("storage: grant a %ds etcd lease: %w", seconds, err)
	}
	if m.leases == nil {
		m.leases = map[time.Duration]grantedLease{}
	}
	m.leases[ttl] = grantedLease{id: resp.ID, granted: time.Now()}
	return resp.ID, nil
}

// putOptions returns the options for writing an object of s: a lease when it has a TTL.
func (s *store) putOptions(ctx context.Context) ([]clientv3.OpOption, error) {
	if s.ttl <= 0 {
		return nil, nil
	}
	id, err := s.b.leases.get(ctx, s.ttl)
	if err != nil {
		return nil, err
	}
	return []clientv3.OpOption{clientv3.WithLease(id)}, nil
}
