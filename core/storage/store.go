package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// maxListPageSize bounds how far a filtered page grows its etcd reads.
const maxListPageSize = 10000

// store implements Interface for one resource.
type store struct {
	b           *Backend
	resource    string
	codec       *codec
	newListFunc func() runtime.Object
	cacher      *cacher
	ttl         time.Duration // objects expire this long after their last write; 0: never
	// recent is the last state written or read per key (recent.go); nil for resources
	// with a Transformer, whose plain form is not kept.
	recent *recentStates
}

var _ Interface = (*store)(nil)

// state is an object as read from etcd.
type state struct {
	obj   runtime.Object
	data  []byte // plain (after the Transformer)
	stale bool   // the stored form is to be rewritten on the next update
	rev   int64
}

// etcdErr turns an etcd error into one of the package's errors, naming key.
func etcdErr(err error, key string) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %s", ErrExpired, key)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %s", ErrTooLarge, key)
	case errors.Is(err, rpctypes.ErrNoSpace):
		return fmt.Errorf("%w: %s: etcd's backend quota is reached (NOSPACE alarm: %v): writes are refused until objects are deleted and etcd is compacted; the server does that and clears the alarm on its own", ErrNoSpace, key, err)
	}
	return fmt.Errorf("storage: etcd request for %s: %w", key, err)
}

func (s *store) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	data, err := s.codec.encode(obj)
	if err != nil {
		return nil, err
	}
	if data, err = s.codec.seal(key, data); err != nil {
		return nil, err
	}
	if err := s.b.space.check("create", key, false); err != nil {
		// A create of a key that exists fails whatever the space: say that (the API
		// server's "create if missing" at start then works on a full disk).
		if resp, rerr := s.read(ctx, "get", key, clientv3.WithCountOnly()); rerr == nil && resp.Count > 0 {
			return nil, fmt.Errorf("%w: %s", ErrAlreadyExists, key)
		}
		return nil, err
	}
	putOpts, err := s.putOptions(ctx)
	if err != nil {
		return nil, err
	}
	r := s.retrier(ctx, true)
	resp, err := s.txn(ctx, r, "create", key, clientv3.Compare(clientv3.CreateRevision(key), "=", 0), clientv3.OpPut(key, string(data), putOpts...), clientv3.OpGet(key))
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		// After an attempt whose outcome was unknown, finding our own bytes means that
		// attempt was applied (the value holds the object's uid and creation time).
		if kvs := resp.Responses[0].GetResponseRange().Kvs; r.unknown && len(kvs) == 1 && bytes.Equal(kvs[0].Value, data) {
			return obj, setRV(obj, kvs[0].ModRevision)
		}
		return nil, fmt.Errorf("%w: %s", ErrAlreadyExists, key)
	}
	if err := setRV(obj, resp.Header.Revision); err != nil {
		return nil, err
	}
	s.recent.put(key, data, resp.Header.Revision)
	return obj, nil
}

func (s *store) Get(ctx context.Context, key string) (runtime.Object, error) {
	st, err := s.get(ctx, key)
	if err != nil {
		return nil, err
	}
	return st.obj, nil
}

func (s *store) get(ctx context.Context, key string) (*state, error) {
	resp, err := s.read(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		s.recent.forget(key)
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	st, err := s.state(resp.Kvs[0])
	if err == nil && !st.stale {
		s.recent.put(key, st.data, st.rev)
	}
	return st, err
}

func (s *store) state(kv *mvccpb.KeyValue) (*state, error) {
	obj, plain, stale, err := s.codec.decodeStored(string(kv.Key), kv.Value, kv.ModRevision)
	if err != nil {
		return nil, err
	}
	return &state{obj: obj, data: plain, stale: stale, rev: kv.ModRevision}, nil
}

// read runs one etcd range request, timed as op, sending it again after faults (reads
// have no effect, so every fault that is not permanent may be retried).
func (s *store) read(ctx context.Context, op, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	rctx, cancel, wait := boundRead(ctx)
	defer cancel()
	r := s.retrier(rctx, false)
	for {
		start := time.Now()
		resp, err := s.b.client.Get(rctx, key, opts...)
		observe(op, s.resource, start)
		if err == nil {
			return resp, nil
		}
		if !r.again(op, err) {
			if (rctx.Err() != nil || deadlineFromServer(err)) && ctx.Err() == nil {
				return nil, noQuorumRead(op, key, wait)
			}
			return nil, r.fail(op, key, err)
		}
	}
}

// txn runs one compare-and-swap on key: then when cmp holds, otherwise the else ops. It
// times the request as op, sends it again after faults as r allows (a compare-and-swap
// passes its compare at most once, so even an attempt that may have been applied can be
// repeated), and turns an etcd error into the package's.
func (s *store) txn(ctx context.Context, r *retrier, op, key string, cmp clientv3.Cmp, then clientv3.Op, els ...clientv3.Op) (*clientv3.TxnResponse, error) {
	if err := s.b.space.check(op, key, then.IsDelete()); err != nil {
		return nil, err
	}
	for {
		start := time.Now()
		resp, err := s.b.client.Txn(ctx).If(cmp).Then(then).Else(els...).Commit()
		observe(op, s.resource, start)
		if err == nil {
			return resp, nil
		}
		if !r.again(op, err) {
			return nil, r.fail(op, key, err)
		}
	}
}

// checkPreconditions is the pure decision whether pre holds on obj stored at key.
func checkPreconditions(key string, pre *Preconditions, obj runtime.Object) error {
	if pre == nil {
		return nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("storage: %s: %w", key, err)
	}
	if pre.UID != nil && *pre.UID != acc.GetUID() {
		return fmt.Errorf("%w: %s: precondition failed: UID in precondition: %s, UID in object meta: %s", ErrConflict, key, *pre.UID, acc.GetUID())
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != acc.GetResourceVersion() {
		return fmt.Errorf("%w: %s: precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", ErrConflict, key, *pre.ResourceVersion, acc.GetResourceVersion())
	}
	return nil
}

// stateFromElse extracts the current state from a failed compare-and-swap whose Else
// branch read key.
func (s *store) stateFromElse(resp *clientv3.TxnResponse, key string) (*state, error) {
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return s.state(kvs[0])
}

// recentOrGet is the state to start an update or delete of key from: the one remembered
// (guessed: true), else read from etcd.
func (s *store) recentOrGet(ctx context.Context, key string) (cur *state, guessed bool, err error) {
	if rs, ok := s.recent.get(key); ok {
		obj, err := s.codec.decodePlain(key, rs.data, rs.rev)
		if err == nil {
			return &state{obj: obj, data: rs.data, rev: rs.rev}, true, nil
		}
		s.recent.forget(key)
	}
	cur, err = s.get(ctx, key)
	return cur, false, err
}

func (s *store) GuaranteedUpdate(ctx context.Context, key string, pre *Preconditions, tryUpdate UpdateFunc) (runtime.Object, error) {
	cur, guessed, err := s.recentOrGet(ctx, key)
	if err != nil {
		return nil, err
	}
	// current replaces a guessed state by the one in etcd before a decision that would end
	// the update (as upstream's origStateIsCurrent).
	current := func() error {
		s.recent.forget(key)
		guessed = false
		cur, err = s.get(ctx, key)
		return err
	}
	r := s.retrier(ctx, true)
	for {
		if err := checkPreconditions(key, pre, cur.obj); err != nil {
			if guessed {
				if err := current(); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		// tryUpdate owns cur.obj: it was decoded for this attempt only.
		updated, err := tryUpdate(cur.obj)
		if err != nil {
			if guessed {
				if err := current(); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		data, err := s.codec.encode(updated)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(data, cur.data) && !cur.stale {
			if guessed {
				if err := current(); err != nil {
					return nil, err
				}
				continue
			}
			if err := setRV(updated, cur.rev); err != nil {
				return nil, err
			}
			return updated, nil
		}
		if data, err = s.codec.seal(key, data); err != nil {
			return nil, err
		}
		if err := s.b.space.check("update", key, false); err != nil {
			return nil, err // before the lease grant, which is a write too
		}
		putOpts, err := s.putOptions(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := s.txn(ctx, r, "update", key, clientv3.Compare(clientv3.ModRevision(key), "=", cur.rev), clientv3.OpPut(key, string(data), putOpts...), clientv3.OpGet(key))
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			if err := setRV(updated, resp.Header.Revision); err != nil {
				return nil, err
			}
			s.recent.put(key, data, resp.Header.Revision)
			return updated, nil
		}
		// Another writer won the race (or the guessed state was old): retry on the
		// current state. Or, after an attempt whose outcome was unknown, that attempt
		// won: the stored bytes are ours.
		guessed = false
		if cur, err = s.stateFromElse(resp, key); err != nil {
			s.recent.forget(key)
			return nil, err
		}
		s.recent.put(key, cur.data, cur.rev)
		if r.unknown && bytes.Equal(cur.data, data) {
			return cur.obj, nil
		}
	}
}

func (s *store) Delete(ctx context.Context, key string, pre *Preconditions) (runtime.Object, error) {
	if pre == nil || (pre.UID == nil && pre.ResourceVersion == nil) {
		// Unconditional: one round trip that returns what was deleted.
		r := s.retrier(ctx, true)
		for {
			start := time.Now()
			resp, err := s.b.client.Delete(ctx, key, clientv3.WithPrevKV())
			observe("delete", s.resource, start)
			if err != nil {
				if r.again("delete", err) {
					continue
				}
				return nil, r.fail("delete", key, err)
			}
			if len(resp.PrevKvs) == 0 && r.unknown {
				// Gone, but whether an earlier attempt of ours deleted it is unknown, and
				// the last state went with it. (The API server always deletes with
				// preconditions, which take the compare-and-swap path below.)
				return nil, fmt.Errorf("%w: delete %s: the object is gone, but etcd did not confirm that this request deleted it", ErrOutcomeUnknown, key)
			}
			s.recent.forget(key)
			if len(resp.PrevKvs) == 0 {
				return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
			}
			return s.codec.decode(key, resp.PrevKvs[0].Value, resp.Header.Revision)
		}
	}
	cur, guessed, err := s.recentOrGet(ctx, key)
	if err != nil {
		return nil, err
	}
	r := s.retrier(ctx, true)
	for {
		if err := checkPreconditions(key, pre, cur.obj); err != nil {
			if guessed {
				s.recent.forget(key)
				guessed = false
				if cur, err = s.get(ctx, key); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		resp, err := s.txn(ctx, r, "delete", key, clientv3.Compare(clientv3.ModRevision(key), "=", cur.rev), clientv3.OpDelete(key), clientv3.OpGet(key))
		if err != nil {
			return nil, err
		}
		if resp.Succeeded || guessed {
			s.recent.forget(key)
		}
		if resp.Succeeded {
			// Like the DELETED watch event, the last state carries the deletion's revision.
			if err := setRV(cur.obj, resp.Header.Revision); err != nil {
				return nil, err
			}
			return cur.obj, nil
		}
		guessed = false
		if kvs := resp.Responses[0].GetResponseRange().Kvs; r.unknown && len(kvs) == 0 {
			// An earlier attempt whose outcome was unknown deleted it. Its exact revision
			// is no longer known: the current one is at least that.
			if err := setRV(cur.obj, resp.Header.Revision); err != nil {
				return nil, err
			}
			return cur.obj, nil
		}
		if cur, err = s.stateFromElse(resp, key); err != nil {
			return nil, err
		}
	}
}
func (s *store) Count(ctx context.Context, prefix string) (int64, error) {
	resp, err := s.read(ctx, "count", prefix, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

func (s *store) List(ctx context.Context, prefix string, opts ListOptions) (runtime.Object, error) {
	if obj, served, err := s.cachedList(ctx, prefix, opts); served {
		return obj, err
	}
	listObj := s.newListFunc()
	listAcc, err := meta.ListAccessor(listObj)
	if err != nil {
		return nil, fmt.Errorf("storage: %T is not a list: %w", listObj, err)
	}
	items := []runtime.Object{}
	lm, err := s.ListRaw(ctx, prefix, opts, func(key string, value []byte, rev int64) (bool, error) {
		obj, err := s.codec.decodePlain(key, value, rev)
		if err != nil {
			return false, err
		}
		if opts.Predicate != nil && !opts.Predicate(obj) {
			return false, nil
		}
		items = append(items, obj)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if err := meta.SetList(listObj, items); err != nil {
		return nil, fmt.Errorf("storage: fill %T: %w", listObj, err)
	}
	listAcc.SetResourceVersion(lm.ResourceVersion)
	if lm.Continue != "" {
		listAcc.SetContinue(lm.Continue)
		listAcc.SetRemainingItemCount(lm.RemainingItemCount)
	}
	return listObj, nil
}

// ListRaw is List for a caller that decodes the values itself (the API server's custom
// resources, which keep decoded objects of their own): visit is called with each key's
// plain stored value (after the Transformer) and revision, in key order, and says
// whether the value is an item of the list (matches the caller's predicate). Paging is
// List's: the revision read at, the limit, the continue token, and remainingItemCount,
// left out when opts.Predicate is set (ListRaw never calls it: visit filters). A visit
// error ends the list with it.
func (s *store) ListRaw(ctx context.Context, prefix string, opts ListOptions, visit func(key string, value []byte, rev int64) (bool, error)) (metav1.ListMeta, error) {
	var (
		startKey = prefix
		rev      int64
		err      error
	)
	if opts.Continue != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return metav1.ListMeta{}, fmt.Errorf("%w: list %s: resourceVersion may not be set together with continue", ErrInvalid, prefix)
		}
		if startKey, rev, err = decodeContinue(opts.Continue, prefix); err != nil {
			return metav1.ListMeta{}, fmt.Errorf("list %s: %w", prefix, err)
		}
	} else if rev, err = parseRV(opts.ResourceVersion); err != nil {
		return metav1.ListMeta{}, fmt.Errorf("list %s: %w", prefix, err)
	}

	rangeEnd := clientv3.GetPrefixRangeEnd(prefix)
	limit := opts.Limit
	pageSize := limit
	var (
		items     int64
		nextKey   string // set when there are more items after this page
		remaining int64
	)
	for {
		ops := []clientv3.OpOption{clientv3.WithRange(rangeEnd)}
		if rev > 0 {
			ops = append(ops, clientv3.WithRev(rev))
		}
		if limit > 0 {
			ops = append(ops, clientv3.WithLimit(pageSize))
		}
		resp, err := s.read(ctx, "list", startKey, ops...)
		if err != nil {
			return metav1.ListMeta{}, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		consumed := 0
		for _, kv := range resp.Kvs {
			if limit > 0 && items >= limit {
				nextKey = string(kv.Key)
				break
			}
			consumed++
			key := string(kv.Key)
			plain, _, err := s.codec.open(key, kv.Value)
			if err != nil {
				return metav1.ListMeta{}, err
			}
			keep, err := visit(key, plain, kv.ModRevision)
			if err != nil {
				return metav1.ListMeta{}, err
			}
			if keep {
				items++
			}
		}
		if nextKey != "" {
			remaining = resp.Count - int64(consumed)
			break
		}
		if limit <= 0 || !resp.More {
			break
		}
		lastKey := string(resp.Kvs[len(resp.Kvs)-1].Key)
		if items >= limit {
			nextKey = lastKey + "\x00"
			remaining = resp.Count - int64(consumed)
			break
		}
		// The predicate dropped items: keep reading at the same revision, in larger
		// steps, until the page is full or the range ends (as upstream does).
		startKey = lastKey + "\x00"
		if pageSize < maxListPageSize {
			pageSize *= 2
		}
	}
	lm := metav1.ListMeta{ResourceVersion: fmt.Sprint(rev)}
	if nextKey != "" {
		token, err := encodeContinue(nextKey, prefix, rev)
		if err != nil {
			return metav1.ListMeta{}, err
		}
		lm.Continue = token
		if opts.Predicate == nil && remaining > 0 {
			lm.RemainingItemCount = &remaining
		}
	}
	return lm, nil
}

func (s *store) Watch(ctx context.Context, prefix string, opts WatchOptions) (watch.Interface, error) {
	if !strings.HasPrefix(prefix, s.cacher.prefix) {
		return nil, fmt.Errorf("%w: watch %s: prefix is outside resource %s", ErrInvalid, prefix, s.resource)
	}
	return s.cacher.watch(ctx, s, prefix, opts)
}

var _ RawLister = (*store)(nil)
