package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Reads served from the watch cache, as upstream's cacher serves them: a get or list with
// resourceVersion=0 ("any") or a resourceVersion N without resourceVersionMatch=Exact
// ("not older than N") is answered from the cache's current state once it has reached N,
// without an etcd round trip, so such reads keep working while etcd has no quorum. A read
// without a resourceVersion is a quorum read from etcd (consistent, as upstream), and one
// with resourceVersionMatch=Exact or a continue token reads etcd at that revision.

// freshnessWait is how long a "not older than N" read waits for the cache to reach N
// before it is answered with ErrTooLarge (upstream's 3 s, then a 504 with Retry-After).
const freshnessWait = 3 * time.Second

// errNotCached is returned by the cached reads when the resource's cache has no state
// yet; the caller reads etcd instead.
var errNotCached = errors.New("storage: the watch cache has no state yet")

// ResourceVersionMatch values of ListOptions, as upstream's.
const (
	MatchNotOlderThan = "NotOlderThan"
	MatchExact        = "Exact"
)

// readPlan is where a read is served from.
type readPlan int

const (
	readQuorum readPlan = iota // etcd, linearizable
	readAtRev                  // etcd at a revision (Exact, continue tokens, paged lists)
	readCache                  // the watch cache, not older than minRev
)

// planList decides where a list is served from (upstream's shouldDelegateList): the
// cache for resourceVersion=0 (its limit ignored, as upstream) and for NotOlderThan
// without a limit; etcd otherwise. A resourceVersion N without a match reads etcd at N
// in this package (the API server passes NotOlderThan where upstream's default is).
func planList(opts ListOptions) (plan readPlan, minRev int64, err error) {
	if opts.Continue != "" {
		return readAtRev, 0, nil
	}
	switch {
	case opts.ResourceVersion == "":
		return readQuorum, 0, nil
	case opts.ResourceVersion == "0":
		return readCache, 0, nil
	}
	rev, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return 0, 0, err
	}
	if opts.ResourceVersionMatch != MatchNotOlderThan || opts.Limit > 0 {
		return readAtRev, rev, nil
	}
	return readCache, rev, nil
}

// planGet decides where a get is served from: without a resourceVersion from etcd
// (quorum), with one from the cache ("not older than"; 0 means any).
func planGet(resourceVersion string) (plan readPlan, minRev int64, err error) {
	if resourceVersion == "" {
		return readQuorum, 0, nil
	}
	rev, err := parseRV(resourceVersion)
	if err != nil {
		return 0, 0, err
	}
	return readCache, rev, nil
}

// listState reads the resource's current state from etcd for the cache.
func (c *cacher) listState(ctx context.Context) (map[string]*event, int64, error) {
	resp, err := c.b.client.Get(ctx, c.prefix, clientv3.WithRange(clientv3.GetPrefixRangeEnd(c.prefix)))
	if err != nil {
		return nil, 0, etcdErr(err, c.prefix)
	}
	state := make(map[string]*event, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		state[string(kv.Key)] = &event{typ: evCreate, key: string(kv.Key), rev: kv.ModRevision, value: kv.Value, codec: c.codec}
	}
	return state, resp.Header.Revision, nil
}

// installStateLocked makes state (read at rev) the cache's state: events after rev are
// applied to it as they arrive.
func (c *cacher) installStateLocked(state map[string]*event, rev int64) {
	c.state, c.stateRev, c.stateReady = state, rev, true
	c.signalLocked()
}

// relistState reads the state anew after the cache lost events (a compaction overtook
// its watch). While etcd does not answer, cached reads go to etcd.
func (c *cacher) relistState(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	state, rev, err := c.listState(lctx)
	if err != nil {
		c.b.log.Warn("watch cache could not read the state anew; reads go to etcd until it does", "resource", c.resource, "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.installStateLocked(state, rev)
}

// applyLocked brings the state up to e.
func (c *cacher) applyLocked(e *event) {
	if !c.stateReady || e.rev <= c.stateRev {
		return // the state's list already has it
	}
	if e.typ == evDelete {
		delete(c.state, e.key)
		return
	}
	c.state[e.key] = e
}

// signalLocked wakes the readers waiting for the cache to advance.
func (c *cacher) signalLocked() {
	close(c.advanced)
	c.advanced = make(chan struct{})
}

// stateRevLocked is the revision the state is current at.
func (c *cacher) stateRevLocked() int64 { return max(c.stateRev, c.lastRev) }

// snapshot returns the state's events under prefix (exact: the one key) in key order and
// the revision they are current at, once the cache has reached minRev. It waits up to
// freshnessWait for that (ErrTooLarge after), and returns errNotCached when the cache has
// no state.
func (c *cacher) snapshot(ctx context.Context, prefix string, exact bool, minRev int64) ([]*event, int64, error) {
	timer := time.NewTimer(freshnessWait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		if !c.stateReady || c.stopped {
			c.mu.Unlock()
			return nil, 0, errNotCached
		}
		rev := c.stateRevLocked()
		if rev >= minRev {
			var evs []*event
			if exact {
				if e, ok := c.state[prefix]; ok {
					evs = append(evs, e)
				}
			} else {
				for k, e := range c.state {
					if strings.HasPrefix(k, prefix) {
						evs = append(evs, e)
					}
				}
			}
			c.mu.Unlock()
			sort.Slice(evs, func(i, j int) bool { return evs[i].key < evs[j].key })
			return evs, rev, nil
		}
		advanced := c.advanced
		c.mu.Unlock()
		select {
		case <-advanced:
		case <-timer.C:
			return nil, 0, fmt.Errorf("%w: %s: the watch cache is at resourceVersion %d, not yet at %d (etcd may have no quorum); try again", ErrTooLarge, prefix, rev, minRev)
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// cachedObject decodes e for a reader: a copy, since the decoded object is shared with
// every watcher of the event and the reader may change what it is given.
func cachedObject(e *event) (runtime.Object, error) {
	obj, err := e.object()
	if err != nil {
		return nil, err
	}
	return obj.DeepCopyObject(), nil
}

// startedCache returns the resource's cache, starting it if needed; nil if it cannot be
// started now (etcd does not answer).
func (s *store) startedCache(ctx context.Context) *cacher {
	if s.cacher.running() {
		return s.cacher
	}
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.cacher.ensureStarted(sctx); err != nil {
		return nil
	}
	return s.cacher
}

// GetCached implements CachedGetter.
func (s *store) GetCached(ctx context.Context, key, resourceVersion string) (runtime.Object, error) {
	plan, minRev, err := planGet(resourceVersion)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if plan == readCache {
		if c := s.startedCache(ctx); c != nil {
			evs, _, err := c.snapshot(ctx, key, true, minRev)
			switch {
			case err == nil && len(evs) == 0:
				return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
			case err == nil:
				return cachedObject(evs[0])
			case !errors.Is(err, errNotCached):
				return nil, err
			}
		}
	}
	return s.Get(ctx, key)
}

// listCached serves a list from the cache; ok is false when the cache has no state.
func (s *store) listCached(ctx context.Context, prefix string, minRev int64, pred Predicate) (runtime.Object, bool, error) {
	c := s.startedCache(ctx)
	if c == nil {
		return nil, false, nil
	}
	evs, rev, err := c.snapshot(ctx, prefix, false, minRev)
	if errors.Is(err, errNotCached) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	items := make([]runtime.Object, 0, len(evs))
	for _, e := range evs {
		obj, err := e.object()
		if err != nil {
			return nil, true, err
		}
		if pred != nil && !pred(obj) {
			continue
		}
		items = append(items, obj.DeepCopyObject())
	}
	listObj := s.newListFunc()
	if err := meta.SetList(listObj, items); err != nil {
		return nil, true, fmt.Errorf("storage: fill %T: %w", listObj, err)
	}
	acc, err := meta.ListAccessor(listObj)
	if err != nil {
		return nil, true, err
	}
	acc.SetResourceVersion(fmt.Sprint(rev))
	return listObj, true, nil
}

// watchFromState starts a watch whose initial events are the cache's current state;
// ok is false when the cache has no state.
func (c *cacher) watchFromState(ctx context.Context, prefix string, exact bool, opts WatchOptions) (*cacheWatcher, []runtime.Object, bool, error) {
	c.mu.Lock()
	if !c.stateReady {
		c.mu.Unlock()
		return nil, nil, false, nil
	}
	var evs []*event
	for k, e := range c.state {
		if exact && k == prefix || !exact && strings.HasPrefix(k, prefix) {
			evs = append(evs, e)
		}
	}
	w, err := c.registerLocked(prefix, exact, c.stateRevLocked(), opts)
	c.mu.Unlock()
	if err != nil {
		return nil, nil, true, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w.ctx, w.cancel = wctx, cancel
	sort.Slice(evs, func(i, j int) bool { return evs[i].key < evs[j].key })
	initial := make([]runtime.Object, 0, len(evs))
	for _, e := range evs {
		obj, err := e.object()
		if err != nil {
			w.Stop()
			return nil, nil, true, err
		}
		if opts.Predicate == nil || opts.Predicate(obj) {
			initial = append(initial, obj)
		}
	}
	return w, initial, true, nil
}

// cachedList is the part of List that the cache may serve.
func (s *store) cachedList(ctx context.Context, prefix string, opts ListOptions) (runtime.Object, bool, error) {
	plan, minRev, err := planList(opts)
	if err != nil {
		return nil, true, fmt.Errorf("list %s: %w", prefix, err)
	}
	if plan != readCache {
		return nil, false, nil
	}
	return s.listCached(ctx, prefix, minRev, opts.Predicate)
}
