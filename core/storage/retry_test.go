package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want failure
	}{
		{rpctypes.ErrGRPCNoLeader, failNotApplied},
		{rpctypes.ErrNoLeader, failNotApplied}, // as the client returns it
		{rpctypes.ErrTimeoutDueToLeaderFail, failUnknown},
		{rpctypes.ErrGRPCNotLeader, failNotApplied},
		{rpctypes.ErrGRPCLeaderChanged, failNotApplied},
		{rpctypes.ErrTooManyRequests, failNotApplied},
		{status.Error(codes.Unknown, "raft proposal dropped"), failNotApplied},
		{status.Error(codes.Unavailable, "there is no connection available"), failNotApplied},
		{rpctypes.ErrGRPCTimeoutDueToLeaderFail, failUnknown},
		{rpctypes.ErrGRPCTimeout, failUnknown},
		{rpctypes.ErrGRPCTimeoutDueToConnectionLost, failUnknown},
		{rpctypes.ErrGRPCStopped, failUnknown},
		{status.Error(codes.Unavailable, "error reading from server: EOF"), failUnknown},
		{rpctypes.ErrGRPCCompacted, failPermanent},
		{rpctypes.ErrGRPCRequestTooLarge, failPermanent},
		{context.DeadlineExceeded, failPermanent},
		{fmt.Errorf("wrapped: %w", context.Canceled), failPermanent},
		{errors.New("something else"), failPermanent},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

// TestDeadlineFromServer: a member that gives up on a read at the deadline the request
// carried answers with a status, possibly before the client's context reports the same.
func TestDeadlineFromServer(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unknown, "context deadline exceeded"), true},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), true},
		{status.Error(codes.Unknown, "raft proposal dropped"), false},
		{rpctypes.ErrGRPCNoLeader, false},
		{context.DeadlineExceeded, false}, // the client's own: read already checks its context
		{errors.New("context deadline exceeded"), false},
	} {
		if got := deadlineFromServer(c.err); got != c.want {
			t.Errorf("deadlineFromServer(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// faults fails the next etcd calls of one gRPC method with err: `before` of them
// without sending them (etcd refused), `after` of them once etcd has answered (the write
// was applied, but its answer was lost).
type faults struct {
	mu            sync.Mutex
	method        string
	before, after int
	err           error
	sent          int // calls of method that reached etcd
}

func (f *faults) set(method string, before, after int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.method, f.before, f.after, f.err, f.sent = method, before, after, err, 0
}

func (f *faults) sentCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent
}

func (f *faults) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	f.mu.Lock()
	if method != f.method {
		f.mu.Unlock()
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	if f.before > 0 {
		f.before--
		f.mu.Unlock()
		return f.err
	}
	f.sent++
	lose := f.after > 0
	if lose {
		f.after--
	}
	f.mu.Unlock()
	if err := invoker(ctx, method, req, reply, cc, opts...); err != nil || !lose {
		return err
	}
	return f.err
}

const txnMethod = "/etcdserverpb.KV/Txn"

// TestWritesAbsorbEtcdFaults injects the faults of an etcd leader change into the store's
// etcd client: a write refused by etcd is sent again; a write applied but reported as
// timed out is recognised as applied (by its compare failing on its own bytes), not
// applied twice and not reported as an error; a fault that lasts past the deadline is
// ErrUnavailable when nothing was written and ErrOutcomeUnknown when something may have.
func TestWritesAbsorbEtcdFaults(t *testing.T) {
	f := &faults{}
	b := embeddedFactory(t, Config{dialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(f.intercept)}})
	s := podStore(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := Key("pods", "ns", "p")

	// Refused twice (no leader), then applied.
	f.set(txnMethod, 2, 0, rpctypes.ErrGRPCNoLeader)
	created, err := s.Create(ctx, key, newPod("ns", "p", nil))
	if err != nil {
		t.Fatalf("create after two refusals: %v", err)
	}
	if n := f.sentCalls(); n != 1 {
		t.Errorf("create reached etcd %d times, want 1", n)
	}
	got, err := s.Get(ctx, key)
	if err != nil || rvOf(t, got) != rvOf(t, created) {
		t.Fatalf("get after create: %v (rv %v, created at %d)", err, got, rvOf(t, created))
	}

	// Applied, answer lost: the retry's compare fails on our own bytes.
	key2 := Key("pods", "ns", "p2")
	f.set(txnMethod, 0, 1, rpctypes.ErrGRPCTimeoutDueToLeaderFail)
	created2, err := s.Create(ctx, key2, newPod("ns", "p2", nil))
	if err != nil {
		t.Fatalf("create whose answer was lost: %v", err)
	}
	if n := f.sentCalls(); n != 2 {
		t.Errorf("create reached etcd %d times, want 2 (the lost one and the check)", n)
	}
	got2, err := s.Get(ctx, key2)
	if err != nil || rvOf(t, got2) != rvOf(t, created2) {
		t.Fatalf("get after create: %v (got %v, create said rv %d)", err, got2, rvOf(t, created2))
	}

	// The same fault when someone else's object is there: still AlreadyExists.
	f.set(txnMethod, 1, 0, rpctypes.ErrGRPCTimeoutDueToLeaderFail)
	if _, err := s.Create(ctx, key2, newPod("ns", "p2", map[string]string{"other": "writer"})); !errors.Is(err, ErrAlreadyExists) {
		t.Errorf("create over another object after an unknown outcome: %v, want ErrAlreadyExists", err)
	}

	// An update applied with its answer lost: tryUpdate runs once, the result is returned.
	f.set(txnMethod, 0, 1, rpctypes.ErrGRPCTimeoutDueToLeaderFail)
	calls := 0
	updated, err := s.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
		calls++
		p := cur.(*corev1.Pod)
		p.Labels = map[string]string{"n": fmt.Sprint(calls)}
		return p, nil
	})
	if err != nil {
		t.Fatalf("update whose answer was lost: %v", err)
	}
	if calls != 1 {
		t.Errorf("tryUpdate ran %d times, want 1", calls)
	}
	got, _ = s.Get(ctx, key)
	if l := got.(*corev1.Pod).Labels["n"]; l != "1" || rvOf(t, got) != rvOf(t, updated) {
		t.Errorf("stored label n=%q rv %d, want n=1 rv %d", l, rvOf(t, got), rvOf(t, updated))
	}

	// A conditional delete applied with its answer lost.
	uid := got.(*corev1.Pod).UID
	f.set(txnMethod, 0, 1, rpctypes.ErrGRPCTimeoutDueToLeaderFail)
	if _, err := s.Delete(ctx, key, &Preconditions{UID: &uid}); err != nil {
		t.Fatalf("delete whose answer was lost: %v", err)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, ErrNotFound) {
		t.Errorf("get after delete: %v, want ErrNotFound", err)
	}

	// Faults that outlast the deadline.
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	f.set(txnMethod, 1<<30, 0, rpctypes.ErrGRPCNoLeader)
	_, err = s.Create(short(), Key("pods", "ns", "p3"), newPod("ns", "p3", nil))
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) || !strings.Contains(err.Error(), "not applied") {
		t.Errorf("create refused until the deadline: %v, want ErrUnavailable saying it was not applied", err)
	}
	f.set(txnMethod, 1<<30, 0, rpctypes.ErrGRPCTimeoutDueToLeaderFail)
	_, err = s.Create(short(), Key("pods", "ns", "p3"), newPod("ns", "p3", nil))
	if !errors.Is(err, ErrOutcomeUnknown) || !strings.Contains(err.Error(), "may or may not have been applied") {
		t.Errorf("create timing out until the deadline: %v, want ErrOutcomeUnknown saying so", err)
	}

	// A permanent error is not sent again.
	f.set(txnMethod, 1, 0, rpctypes.ErrGRPCRequestTooLarge)
	_, err = s.Create(ctx, Key("pods", "ns", "p4"), newPod("ns", "p4", nil))
	if err == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) || f.sentCalls() != 0 {
		t.Errorf("create with a permanent error: %v after %d calls sent, want the error at once", err, f.sentCalls())
	}
	f.set("", 0, 0, nil)
}
