package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors of requests that etcd could not serve before the caller's deadline (see
// docs/storage.md, "etcd faults"). The API server maps ErrUnavailable to 503 (nothing
// was written: try again) and ErrOutcomeUnknown to 500 (a write may have happened).
var (
	ErrUnavailable    = errors.New("storage: etcd is unavailable")
	ErrOutcomeUnknown = errors.New("storage: the outcome of the write is unknown")
)

// Retry timing. A leader election on etcd's defaults takes one to a few seconds, and a
// member that lost its leader answers a proposal only after its request timeout (7 s on
// defaults), so the retries must be allowed most of a request's deadline.
const (
	retryFirstWait = 50 * time.Millisecond
	retryMaxWait   = time.Second
	// maxRetryWindow bounds the retries of one call whatever its context's deadline
	// (the API server's requests have one of 60 s at most, but a watch's lasts its
	// timeoutSeconds, up to an hour).
	maxRetryWindow = time.Minute
)

// failure is what a failed etcd request proves about its effect.
type failure int

const (
	// failPermanent: not a fault of the cluster (compacted revision, request too large,
	// the caller's context ended): returned as it is.
	failPermanent failure = iota
	// failNotApplied: etcd refused the request before proposing it (no leader, leader
	// changed, too many requests, no connection), so it had no effect and can be sent again.
	failNotApplied
	// failUnknown: the request may have been proposed and may yet be applied (a proposal
	// timed out around a leader failure, the connection broke mid-request). Only a read or
	// a compare-and-swap may be sent again: at most one of the attempts can pass the compare.
	failUnknown
)

func (f failure) String() string {
	switch f {
	case failNotApplied:
		return "not_applied"
	case failUnknown:
		return "unknown"
	}
	return "permanent"
}

// classify decides what err proves. etcd sends its server errors as gRPC statuses;
// rpctypes.Error turns the known ones back into typed values.
func classify(err error) failure {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return failPermanent
	}
	etcdErr := rpctypes.Error(err) // the client already returns these typed; a raw status is typed here
	switch etcdErr {
	case rpctypes.ErrNoLeader, rpctypes.ErrNotLeader, rpctypes.ErrLeaderChanged,
		rpctypes.ErrTooManyRequests, rpctypes.ErrUnhealthy:
		return failNotApplied
	}
	switch rpctypes.ErrorDesc(err) {
	case "raft proposal dropped": // raft.ErrProposalDropped: etcd sends it as text only (codes.Unknown)
		return failNotApplied
	case "there is no address available", "there is no connection available": // client side, nothing sent
		return failNotApplied
	}
	// ErrTimeout, ErrTimeoutDueToLeaderFail, ErrTimeoutDueToConnectionLost, ErrStopped,
	// a transport that closed with the request in flight.
	var typed rpctypes.EtcdError
	if errors.As(etcdErr, &typed) && typed.Code() == codes.Unavailable {
		return failUnknown
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable {
		return failUnknown
	}
	return failPermanent
}

// retrier runs one storage request's etcd round trips: it says whether a failed one may
// be sent again (after a growing wait, within the context's deadline), remembers whether
// an earlier attempt of a write may have been applied, and builds the final error.
type retrier struct {
	ctx      context.Context
	resource string
	write    bool
	deadline time.Time
	wait     time.Duration
	// unknown: an attempt of this write failed without proof that it was not applied.
	unknown bool
}

func (s *store) retrier(ctx context.Context, write bool) *retrier {
	deadline := time.Now().Add(maxRetryWindow)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return &retrier{ctx: ctx, resource: s.resource, write: write, deadline: deadline, wait: retryFirstWait}
}

// again reports whether the request of op that failed with err may be sent again, and
// waits before saying yes.
func (r *retrier) again(op string, err error) bool {
	f := classify(err)
	if r.write && (f == failUnknown || (f == failPermanent && r.ctx.Err() != nil)) {
		// A write cut short by the caller's deadline may have reached etcd too.
		r.unknown = true
	}
	if f == failPermanent {
		return false
	}
	wait := r.wait
	r.wait = min(2*r.wait, retryMaxWait)
	if time.Now().Add(wait).After(r.deadline) {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return false
	case <-t.C:
	}
	retries.WithLabelValues(op, r.resource, f.String()).Inc()
	return true
}

// fail is the error for a request of op on key whose last attempt failed with err and
// that is not tried again.
func (r *retrier) fail(op, key string, err error) error {
	switch {
	case r.unknown:
		return fmt.Errorf("%w: %s %s: etcd did not confirm or refuse the write before the request's deadline, so it may or may not have been applied (last error: %w); read the object to find out", ErrOutcomeUnknown, op, key, err)
	case classify(err) != failPermanent:
		return fmt.Errorf("%w: %s %s: %v; the request was not applied: try again", ErrUnavailable, op, key, err)
	}
	return etcdErr(err, key)
}

// maxReadWait bounds the etcd round trips of one read: longer than a leader election and
// a member's request timeout (7 s on etcd's defaults), so reads ride out a leader change,
// but a read while etcd has no quorum fails with a clear error instead of holding its
// client until the request's deadline (60 s by default).
const maxReadWait = 15 * time.Second

// boundRead derives the context of a read's etcd round trips: it ends maxReadWait from
// now or a little before ctx does (a tenth of what is left, at most a second), so that
// the read's own error, which says why, reaches the client before its request times out.
func boundRead(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	wait := maxReadWait
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		wait = min(wait, left-min(left/10, time.Second))
	}
	rctx, cancel := context.WithTimeout(ctx, max(wait, 0))
	return rctx, cancel, wait
}

// deadlineFromServer reports whether err is etcd's answer that the request's deadline
// passed on its side. The deadline travels with the request, so the member may give up
// (codes.Unknown or DeadlineExceeded, "context deadline exceeded") an instant before the
// client's own context reports it: the same cause, seen first from the other end.
func deadlineFromServer(err error) bool {
	s, ok := status.FromError(err)
	if !ok {
		return false
	}
	return s.Code() == codes.DeadlineExceeded ||
		(s.Code() == codes.Unknown && s.Message() == context.DeadlineExceeded.Error())
}

// noQuorumRead is the error of a read etcd did not answer within wait.
func noQuorumRead(op, key string, wait time.Duration) error {
	return fmt.Errorf("%w: %s %s: etcd did not answer a quorum read within %s (no leader, or no quorum of members); "+
		"reads with resourceVersion=0 or a resourceVersion the watch cache has reached are served from the cache meanwhile",
		ErrUnavailable, op, key, wait.Round(time.Millisecond))
}
