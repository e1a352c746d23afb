package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The watch cache ("cacher") of one resource: one etcd watch on /registry/<resource>/
// feeds a ring of recent events and fans them out to every watcher of the resource.
// docs/storage.md explains the design.

type eventType int

const (
	evCreate eventType = iota
	evUpdate
	evDelete
	evProgress // etcd reported that every event up to rev was delivered
)

// event is one change of one key, shared by every watcher that sees it. Objects are
// decoded at most once, on first use, so events nobody looks at cost no decoding.
type event struct {
	typ       eventType
	key       string
	rev       int64 // the change's revision (ModRevision, or the deletion's revision)
	value     []byte
	prevValue []byte
	prevRev   int64
	codec     *codec

	objOnce  sync.Once
	obj      runtime.Object
	objErr   error
	prevOnce sync.Once
	prev     runtime.Object
	prevErr  error

	// The objects with their encodings, for watchers with SharedEncodings (caching.go).
	cacheMu     sync.Mutex
	objC, prevC *CachingObject
}

func (e *event) object() (runtime.Object, error) {
	e.objOnce.Do(func() { e.obj, e.objErr = e.codec.decode(e.key, e.value, e.rev) })
	return e.obj, e.objErr
}

// previous is the state before the change. For a deletion it is the deleted object and
// carries the deletion's revision, as upstream's DELETED events do.
func (e *event) previous() (runtime.Object, error) {
	e.prevOnce.Do(func() {
		rev := e.prevRev
		if e.typ == evDelete {
			rev = e.rev
		}
		e.prev, e.prevErr = e.codec.decode(e.key, e.prevValue, rev)
	})
	return e.prev, e.prevErr
}

func newEvent(ev *clientv3.Event, c *codec) *event {
	e := &event{key: string(ev.Kv.Key), rev: ev.Kv.ModRevision, value: ev.Kv.Value, codec: c}
	if ev.PrevKv != nil {
		e.prevValue, e.prevRev = ev.PrevKv.Value, ev.PrevKv.ModRevision
	}
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		e.typ = evDelete
	case ev.IsCreate() || ev.PrevKv == nil:
		e.typ = evCreate
	default:
		e.typ = evUpdate
	}
	return e
}

// convert decides what one watcher with predicate pred sees of e: an object leaving the
// predicate is DELETED (with its new state), one entering it is ADDED. ok is false when
// the watcher sees nothing.
func convert(e *event, pred Predicate) (ev watch.Event, ok bool, err error) {
	switch e.typ {
	case evCreate:
		obj, err := e.object()
		if err != nil {
			return ev, false, err
		}
		if pred != nil && !pred(obj) {
			return ev, false, nil
		}
		return watch.Event{Type: watch.Added, Object: obj}, true, nil
	case evDelete:
		prev, err := e.previous()
		if err != nil {
			return ev, false, err
		}
		if pred != nil && !pred(prev) {
			return ev, false, nil
		}
		return watch.Event{Type: watch.Deleted, Object: prev}, true, nil
	case evUpdate:
		obj, err := e.object()
		if err != nil {
			return ev, false, err
		}
		if pred == nil {
			return watch.Event{Type: watch.Modified, Object: obj}, true, nil
		}
		prev, err := e.previous()
		if err != nil {
			return ev, false, err
		}
		cur, was := pred(obj), pred(prev)
		switch {
		case cur && was:
			return watch.Event{Type: watch.Modified, Object: obj}, true, nil
		case cur:
			return watch.Event{Type: watch.Added, Object: obj}, true, nil
		case was:
			return watch.Event{Type: watch.Deleted, Object: obj}, true, nil
		}
	}
	return ev, false, nil
}

// ring holds the most recent events in revision order.
type ring struct {
	buf   []*event
	start int
	n     int
}

// push appends e and returns the event it evicted, if any.
func (r *ring) push(e *event) (evicted *event) {
	if r.n == len(r.buf) {
		evicted = r.buf[r.start]
		r.buf[r.start] = e
		r.start = (r.start + 1) % len(r.buf)
		return evicted
	}
	r.buf[(r.start+r.n)%len(r.buf)] = e
	r.n++
	return nil
}

func (r *ring) at(i int) *event { return r.buf[(r.start+i)%len(r.buf)] }

// since returns the events with a revision above rev.
func (r *ring) since(rev int64) []*event {
	i := sort.Search(r.n, func(i int) bool { return r.at(i).rev > rev })
	out := make([]*event, 0, r.n-i)
	for ; i < r.n; i++ {
		out = append(out, r.at(i))
	}
	return out
}

func (r *ring) reset() {
	clear(r.buf)
	r.start, r.n = 0, 0
}

type cacher struct {
	b        *Backend
	resource string
	prefix   string
	codec    *codec
	newFunc  func() runtime.Object

	startMu sync.Mutex // serializes starting the etcd watch

	mu       sync.Mutex
	ring     ring
	floor    int64                      // every event with a revision above floor is in ring or still to come
	lastRev  int64                      // every event up to lastRev has been received
	watchers map[*cacheWatcher]struct{} // every watcher
	// Watchers are also filed under the index value they asked for (WithWatchIndex), or
	// as unindexed; an event is queued only for unindexed watchers and those filed under
	// its object's value before or after the change.
	index     func(runtime.Object) string
	unindexed map[*cacheWatcher]struct{}
	byIndex   map[string]map[*cacheWatcher]struct{}
	started   bool
	stopped   bool
	cancel    context.CancelFunc
	done      chan struct{}

	// The current state of the resource (cacheread.go): the newest event of every key,
	// read by a list at stateRev when the cache starts and kept by process from then on.
	// Reads with resourceVersion=0 or "not older than" are served from it, also while
	// etcd has no quorum. stateReady is false until the list is read, and again after
	// the cache fell behind a compaction until it is read anew.
	state      map[string]*event
	stateRev   int64
	stateReady bool
	// advanced is closed (and replaced) whenever lastRev or the state moves, for readers
	// waiting until the cache has reached a revision.
	advanced chan struct{}
}

func newCacher(b *Backend, resource string, newFunc func() runtime.Object) *cacher {
	return &cacher{
		b:         b,
		resource:  resource,
		prefix:    Prefix(resource, ""),
		codec:     newCodec(newFunc, b.cfg.legacyJSON),
		newFunc:   newFunc,
		ring:      ring{buf: make([]*event, b.cfg.WatchCacheSize)},
		watchers:  map[*cacheWatcher]struct{}{},
		unindexed: map[*cacheWatcher]struct{}{},
		byIndex:   map[string]map[*cacheWatcher]struct{}{},
		advanced:  make(chan struct{}),
	}
}

func (c *cacher) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started && !c.stopped
}

// ensureStarted opens the resource's etcd watch on first use. It starts at the oldest
// revision etcd still has (the last compaction this store recorded), so the ring holds
// as much recent history as fits and clients resuming after an API server restart are
// served from memory instead of being sent back to relist.
func (c *cacher) ensureStarted(ctx context.Context) error {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	c.mu.Lock()
	started, stopped := c.started, c.stopped
	c.mu.Unlock()
	if stopped {
		return fmt.Errorf("storage: watch %s: backend is closed", c.prefix)
	}
	if started {
		return nil
	}
	from := int64(1)
	resp, err := c.b.client.Get(ctx, compactRevKey)
	if err != nil {
		return etcdErr(err, c.prefix)
	}
	if len(resp.Kvs) > 0 {
		if r, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err == nil && r > from {
			from = r
		}
	}
	state, stateRev, err := c.listState(ctx)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(c.b.ctx)
	c.mu.Lock()
	c.floor, c.lastRev = from-1, from-1
	c.started, c.cancel, c.done = true, cancel, make(chan struct{})
	c.installStateLocked(state, stateRev)
	c.mu.Unlock()
	go c.run(wctx, from)
	return nil
}

func (c *cacher) openWatch(ctx context.Context, from int64) clientv3.WatchChan {
	return c.b.client.Watch(ctx, c.prefix,
		clientv3.WithRange(clientv3.GetPrefixRangeEnd(c.prefix)),
		clientv3.WithRev(from), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
}

// run receives the etcd watch until ctx ends, reopening it after errors.
func (c *cacher) run(ctx context.Context, from int64) {
	defer close(c.done)
	wch := c.openWatch(ctx, from)
	// Progress requests keep lastRev moving while the resource is idle, so bookmarks
	// carry a current revision.
	progress := time.NewTicker(max(c.b.cfg.BookmarkInterval/2, time.Millisecond))
	defer progress.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-progress.C:
			if err := c.b.client.RequestProgress(ctx); err != nil && ctx.Err() == nil {
				c.b.log.Debug("watch progress request failed", "resource", c.resource, "err", err)
			}
		case resp, ok := <-wch:
			if ctx.Err() != nil {
				return
			}
			switch {
			case !ok:
				c.mu.Lock()
				from := c.lastRev + 1
				c.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
				wch = c.openWatch(ctx, from)
			case resp.CompactRevision != 0:
				// We fell behind a compaction: the events in between are gone, so every
				// watcher must start over (and relist if its revision is too old).
				c.b.log.Warn("watch cache fell behind compaction; closing watchers", "resource", c.resource, "compactRevision", resp.CompactRevision)
				c.reset(resp.CompactRevision - 1)
				c.relistState(ctx)
				wch = c.openWatch(ctx, resp.CompactRevision)
			case resp.Err() != nil:
				c.b.log.Warn("etcd watch failed; reopening", "resource", c.resource, "err", resp.Err())
			case resp.IsProgressNotify():
				c.progressTo(resp.Header.Revision)
			default:
				c.process(resp.Events)
			}
		}
	}
}

func (c *cacher) process(events []*clientv3.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.signalLocked()
	for _, ev := range events {
		e := newEvent(ev, c.codec)
		if old := c.ring.push(e); old != nil && old.rev > c.floor {
			c.floor = old.rev
		}
		c.lastRev = e.rev
		c.applyLocked(e)
		for w := range c.unindexed {
			c.deliverLocked(w, e)
		}
		if len(c.byIndex) > 0 {
			cur, prev := c.indexValues(e)
			for w := range c.byIndex[cur] {
				c.deliverLocked(w, e)
			}
			if prev != cur {
				for w := range c.byIndex[prev] {
					c.deliverLocked(w, e)
				}
			}
		}
	}
}

func (c *cacher) deliverLocked(w *cacheWatcher, e *event) {
	if !w.matches(e.key) {
		return
	}
	select {
	case w.in <- e:
		w.queued++
	default:
		// Too slow: close it rather than let it hold up the others.
		c.b.log.Info("closing watcher that fell behind", "resource", c.resource, "prefix", w.prefix, "buffer", cap(w.in))
		c.removeLocked(w)
	}
}

// indexValues returns the index values of e's object after and before the change ("" for
// a state that does not exist or cannot be decoded).
func (c *cacher) indexValues(e *event) (cur, prev string) {
	if e.typ == evCreate || e.typ == evUpdate {
		if obj, err := e.object(); err == nil {
			cur = c.index(obj)
		}
	}
	if e.typ == evUpdate || e.typ == evDelete {
		if obj, err := e.previous(); err == nil {
			prev = c.index(obj)
		}
	}
	return cur, prev
}

// wants reports whether w, indexed or not, is sent e.
func (c *cacher) wants(w *cacheWatcher, e *event) bool {
	if !w.matches(e.key) {
		return false
	}
	if w.indexValue == "" {
		return true
	}
	cur, prev := c.indexValues(e)
	return cur == w.indexValue || prev == w.indexValue
}

func (c *cacher) progressTo(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev < c.lastRev {
		return
	}
	// Sent even when rev == lastRev: watchers that did not match the last events only
	// learn this way that their stream is current up to rev.
	c.lastRev = rev
	c.signalLocked()
	e := &event{typ: evProgress, rev: rev}
	for w := range c.watchers {
		select {
		case w.in <- e:
		default: // a full buffer is dealt with when the next real event arrives
		}
	}
}

// reset drops the ring and closes every watcher; the cache restarts after floor.
func (c *cacher) reset(floor int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.watchers {
		c.removeLocked(w)
	}
	c.ring.reset()
	c.floor, c.lastRev = floor, floor
	c.stateReady, c.state = false, nil // events were lost: read anew (relistState)
}

// compacted records that etcd history before rev is gone: a watch from an older
// revision now gets ErrExpired even if the ring still holds its events, so that every
// API server of a cluster answers the same.
func (c *cacher) compacted(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev-1 > c.floor {
		c.floor = rev - 1
	}
}

func (c *cacher) stop() {
	c.mu.Lock()
	c.stopped = true
	for w := range c.watchers {
		c.removeLocked(w)
	}
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (c *cacher) remove(w *cacheWatcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(w)
}

func (c *cacher) removeLocked(w *cacheWatcher) {
	if _, ok := c.watchers[w]; ok {
		delete(c.watchers, w)
		delete(c.unindexed, w)
		if set := c.byIndex[w.indexValue]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(c.byIndex, w.indexValue)
			}
		}
		close(w.in)
	}
}

// initialState reads what a watch without a resourceVersion starts with.
func (c *cacher) initialState(ctx context.Context, s *store, prefix string, exact bool, pred Predicate) ([]runtime.Object, int64, error) {
	ops := []clientv3.OpOption{}
	if !exact {
		ops = append(ops, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)))
	}
	rctx, cancel, wait := boundRead(ctx)
	defer cancel()
	start := time.Now()
	resp, err := c.b.client.Get(rctx, prefix, ops...)
	observe("list", c.resource, start)
	if err != nil {
		if (rctx.Err() != nil || deadlineFromServer(err)) && ctx.Err() == nil {
			return nil, 0, noQuorumRead("watch", prefix, wait)
		}
		return nil, 0, etcdErr(err, prefix)
	}
	objs := make([]runtime.Object, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		obj, err := s.codec.decode(string(kv.Key), kv.Value, kv.ModRevision)
		if err != nil {
			return nil, 0, err
		}
		if pred == nil || pred(obj) {
			objs = append(objs, obj)
		}
	}
	return objs, resp.Header.Revision, nil
}

func (c *cacher) watch(ctx context.Context, s *store, prefix string, opts WatchOptions) (watch.Interface, error) {
	rev, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", prefix, err)
	}
	if err := c.ensureStarted(ctx); err != nil {
		return nil, err
	}
	exact := !strings.HasSuffix(prefix, "/")
	fromState := rev == 0
	if !fromState {
		if err := c.checkNotFuture(ctx, prefix, rev); err != nil {
			return nil, err
		}
	}
	if opts.ResourceVersion == "0" {
		// As upstream: "any" state will do, so the cache's current state is the start
		// (served while etcd has no quorum too).
		if w, initial, ok, err := c.watchFromState(ctx, prefix, exact, opts); ok || err != nil {
			if err != nil {
				return nil, err
			}
			go w.run(initial)
			return w, nil
		}
	}
	for attempt := 0; ; attempt++ {
		var initial []runtime.Object
		if fromState {
			if initial, rev, err = c.initialState(ctx, s, prefix, exact, opts.Predicate); err != nil {
				return nil, err
			}
		}
		w, err := c.register(prefix, exact, rev, opts)
		if errors.Is(err, ErrExpired) && fromState && attempt < 3 {
			continue // more events than the ring holds arrived since the read: read again
		}
		if err != nil {
			return nil, err
		}
		wctx, cancel := context.WithCancel(ctx)
		w.ctx, w.cancel = wctx, cancel
		go w.run(initial)
		return w, nil
	}
}

// checkNotFuture returns ErrTooLarge for a revision etcd has not reached, as upstream
// does, instead of a watch that waits silently for it. Only a revision beyond what the
// cache has seen costs an etcd round trip.
func (c *cacher) checkNotFuture(ctx context.Context, prefix string, rev int64) error {
	c.mu.Lock()
	seen := c.lastRev
	c.mu.Unlock()
	if rev <= seen {
		return nil
	}
	resp, err := c.b.client.Get(ctx, compactRevKey, clientv3.WithCountOnly())
	if err != nil {
		return etcdErr(err, prefix)
	}
	if rev > resp.Header.Revision {
		return fmt.Errorf("%w: watch %s from resourceVersion %d: the store is at %d", ErrTooLarge, prefix, rev, resp.Header.Revision)
	}
	return nil
}

// register adds a watcher that receives the events after rev, replaying those the ring
// already holds.
func (c *cacher) register(prefix string, exact bool, rev int64, opts WatchOptions) (*cacheWatcher, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registerLocked(prefix, exact, rev, opts)
}

func (c *cacher) registerLocked(prefix string, exact bool, rev int64, opts WatchOptions) (*cacheWatcher, error) {
	if c.stopped {
		return nil, fmt.Errorf("storage: watch %s: backend is closed", prefix)
	}
	if rev < c.floor {
		return nil, fmt.Errorf("%w: watch %s from resourceVersion %d: the oldest available is %d", ErrExpired, prefix, rev, c.floor)
	}
	w := &cacheWatcher{
		c:         c,
		prefix:    prefix,
		exact:     exact,
		pred:      opts.Predicate,
		minRev:    rev,
		bookmarks: opts.AllowBookmarks,
		shared:    opts.SharedEncodings,
		result:    make(chan watch.Event),
	}
	if c.index != nil {
		w.indexValue = opts.IndexValue
	}
	var replay []*event
	for _, e := range c.ring.since(rev) {
		if c.wants(w, e) {
			replay = append(replay, e)
		}
	}
	w.in = make(chan *event, c.b.cfg.WatchBuffer+len(replay))
	for _, e := range replay {
		w.in <- e
	}
	w.queued = len(replay)
	if c.lastRev > rev {
		// Everything up to lastRev is in the replay: let bookmarks say so.
		w.in <- &event{typ: evProgress, rev: c.lastRev}
	}
	c.watchers[w] = struct{}{}
	if w.indexValue == "" {
		c.unindexed[w] = struct{}{}
	} else {
		if c.byIndex[w.indexValue] == nil {
			c.byIndex[w.indexValue] = map[*cacheWatcher]struct{}{}
		}
		c.byIndex[w.indexValue][w] = struct{}{}
	}
	return w, nil
}

// cacheWatcher is one client's watch. The cacher feeds in without blocking; the
// watcher's goroutine filters and converts events and blocks only itself on result.
type cacheWatcher struct {
	c         *cacher
	prefix    string
	exact     bool
	pred      Predicate
	minRev    int64
	bookmarks bool
	shared    bool // WatchOptions.SharedEncodings
	// indexValue files the watcher under this value of the resource's watch index; ""
	// when unindexed.
	indexValue string
	queued     int // events handed to this watcher (guarded by the cacher's mu)
	in         chan *event
	result     chan watch.Event
	ctx        context.Context
	cancel     context.CancelFunc
}

func (w *cacheWatcher) matches(key string) bool {
	if w.exact {
		return key == w.prefix
	}
	return strings.HasPrefix(key, w.prefix)
}

// ResultChan implements watch.Interface.
func (w *cacheWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface.
func (w *cacheWatcher) Stop() {
	w.cancel()
	w.c.remove(w)
}

func (w *cacheWatcher) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}

func (w *cacheWatcher) run(initial []runtime.Object) {
	defer close(w.result)
	defer w.Stop()
	for _, obj := range initial {
		if !w.send(watch.Event{Type: watch.Added, Object: obj}) {
			return
		}
	}
	var tick <-chan time.Time
	if w.bookmarks {
		t := time.NewTicker(w.c.b.cfg.BookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	lastRev := w.minRev
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-tick:
			if lastRev > 0 {
				obj := w.c.newFunc()
				if err := setRV(obj, lastRev); err == nil && !w.send(watch.Event{Type: watch.Bookmark, Object: obj}) {
					return
				}
			}
		case e, ok := <-w.in:
			if !ok {
				return
			}
			if e.rev <= w.minRev {
				continue
			}
			if e.rev > lastRev {
				lastRev = e.rev
			}
			if e.typ == evProgress {
				continue
			}
			ev, ok, err := convert(e, w.pred)
			if err != nil {
				w.c.b.log.Error("skipping undecodable watch event", "key", e.key, "revision", e.rev, "err", err)
				continue
			}
			if ok && w.shared {
				ev.Object = e.caching(ev.Object)
			}
			if ok && !w.send(ev) {
				return
			}
		}
	}
}
