// Package leaderelect runs a component's work under a Lease, term after term, for the
// scheduler and the controller manager.
//
// client-go's LeaderElector leads once: when it cannot renew the Lease within the renew
// deadline (another candidate took it, or the API server could not write for that long,
// as while etcd has no quorum) its Run returns for good. Run here makes the loss the end
// of a term, not of the component: the term's work gets a context that ends with the
// leadership, Run waits until that work has returned (so two terms of one process never
// overlap, and nothing of the old term acts after the loss), and then campaigns again with
// a fresh lock and a fresh elector. A standby that waits for the Lease is healthy; Status
// says what the component is doing, for /readyz and /healthz.
package leaderelect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Defaults of the election, as upstream's components.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// maxFailureBackoff caps the wait before campaigning again after a term's work failed.
	maxFailureBackoff = 30 * time.Second
)

// Config of an elected component.
type Config struct {
	// Client reaches the Leases (required).
	Client coordinationv1.CoordinationV1Interface
	// Namespace and Name of the Lease (required).
	Namespace, Name string
	// Identity of this candidate in the Lease (required). It stays the same across terms:
	// a Lease still naming this identity (its renewals failed, nobody else took it) is
	// taken back at once when the API server answers again.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod default to 15 s, 10 s and 2 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Component names the component in logs ("scheduler", "controller manager").
	Component string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Status, when set, follows the phases of the component.
	Status *Status
}

// Run campaigns for the Lease and, each time this candidate gets it, runs lead with a
// context that ends when the leadership ends. After a term Run waits for lead to return,
// then campaigns again; it returns nil only when ctx ends. If lead returns while the
// Lease is still held (an error, or its work ended by itself), the Lease is released,
// the error is reported in Status, and Run campaigns again after a back-off (RetryPeriod,
// doubling up to 30 s while terms keep failing). On ctx end the Lease is released once
// lead has returned, so a standby takes over at once and never overlaps with this term.
func Run(ctx context.Context, c Config, lead func(ctx context.Context) error) error {
	if c.Client == nil || c.Name == "" || c.Namespace == "" || c.Identity == "" {
		return errors.New("leaderelect: Config.Client, Namespace, Name and Identity are required")
	}
	c.LeaseDuration = durOr(c.LeaseDuration, DefaultLeaseDuration)
	c.RenewDeadline = durOr(c.RenewDeadline, DefaultRenewDeadline)
	c.RetryPeriod = durOr(c.RetryPeriod, DefaultRetryPeriod)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Component == "" {
		c.Component = c.Name
	}
	if c.Status == nil {
		c.Status = NewStatus()
	}
	defer c.Status.set(Stopped, nil)
	log := c.Logger.With("lease", c.Namespace+"/"+c.Name, "identity", c.Identity)
	failures := 0
	for {
		c.Status.set(Standby, nil)
		log.Info(c.Component + " waiting for the leader lease")
		if err := takeover(ctx, c, log); err != nil {
			return nil // ctx ended while standing by
		}
		t, err := runTerm(ctx, c, lead)
		if err != nil {
			return err
		}
		if t.led && (ctx.Err() != nil || !t.lost) {
			// Stopping, or lead returned while this candidate still held the Lease:
			// hand it over now that the term's work has stopped.
			release(ctx, c, log)
		}
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case t.err != nil:
			failures++
			c.Status.set(Failed, t.err)
			delay := backoff(c.RetryPeriod, failures)
			log.Error(c.Component+" failed while leading; campaigning again", "err", t.err, "after", delay)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(delay):
			}
		case t.lost:
			failures = 0
			log.Error("lost leadership; " + c.Component + " stopped its work and campaigns again")
		default:
			failures = 0
			log.Warn(c.Component + " stopped leading by itself; campaigning again")
		}
	}
}

// term is how one campaign ended.
type term struct {
	led  bool  // lead ran
	lost bool  // the Lease was lost while lead ran (lead did not end first)
	err  error // what lead returned
}

// runTerm campaigns once with a fresh lock and elector, and returns once lead (if it
// started) has returned.
func runTerm(ctx context.Context, c Config, lead func(ctx context.Context) error) (term, error) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
		Client:     c.Client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
	}
	termCtx, endTerm := context.WithCancel(ctx)
	defer endTerm()
	// The elector starts OnStartedLeading in a goroutine of its own and does not wait
	// for it; state makes sure runTerm returns only after lead has, and that a callback
	// arriving after the elector returned starts nothing.
	const (
		idle = iota
		running
		finished
	)
	var (
		mu       sync.Mutex
		state    = idle
		t        term
		selfEnd  bool
		leadDone = make(chan struct{})
	)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: c.LeaseDuration,
		RenewDeadline: c.RenewDeadline,
		RetryPeriod:   c.RetryPeriod,
		// Released by Run once lead has returned, never while the term's work may still
		// be acting (client-go releases before it cancels the work's context).
		ReleaseOnCancel: false,
		Name:            c.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				mu.Lock()
				if state != idle {
					mu.Unlock()
					return
				}
				state = running
				mu.Unlock()
				defer close(leadDone)
				c.Status.set(Leading, nil)
				c.Logger.Info(c.Component+" is the leader", "lease", c.Namespace+"/"+c.Name, "identity", c.Identity)
				err := lead(lctx)
				mu.Lock()
				t.err = err
				selfEnd = lctx.Err() == nil
				mu.Unlock()
				if selfEnd {
					endTerm() // stop renewing: Run releases the Lease
				}
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return term{}, fmt.Errorf("leaderelect: %w", err)
	}
	le.Run(termCtx)
	mu.Lock()
	started := state == running
	state = finished
	mu.Unlock()
	if started {
		c.Status.set(Stopping, nil)
		<-leadDone
	}
	mu.Lock()
	defer mu.Unlock()
	t.led = started
	t.lost = started && !selfEnd && ctx.Err() == nil
	return t, nil
}

// takeover stands by while another candidate holds the Lease, and takes it the moment
// that holder has not renewed it for its leaseDurationSeconds, with one compare-and-swap
// on the Lease's resourceVersion. It returns when the Lease is free, missing, already this
// candidate's, taken here, or when the API server cannot be read (the elector then
// campaigns as usual); its error is only ctx's.
//
// Why not leave the wait to client-go's elector: it polls every RetryPeriod with a jitter
// of up to 1.2x, and measures expiry from the poll that first saw the last renewal, so a
// standby takes over up to LeaseDuration + 2 x 2.2 x RetryPeriod after the holder's last
// renewal (up to 23.8 s with the defaults). Here the standby watches the Lease, so its
// observation of a renewal lags the renewal by the watch's delivery only, and the takeover
// happens at expiry, not at the next poll: at most LeaseDuration after the holder's last
// renewal. Expiry is still measured on this candidate's own clock, from the time it saw
// the renewal, as upstream does, so the candidates' clocks need not agree. The elector
// started next sees this candidate as the holder and leads at once.
func takeover(ctx context.Context, c Config, log *slog.Logger) error {
	leases := c.Client.Leases(c.Namespace)
	var (
		seen     *coordv1.Lease // the Lease as last observed
		observed time.Time      // when seen was first observed here
	)
	// changed says whether l is another record than seen, as client-go's elector compares
	// the records it reads.
	changed := func(l *coordv1.Lease) bool {
		return seen == nil || l.ResourceVersion != seen.ResourceVersion || !apiequality.Semantic.DeepEqual(l.Spec, seen.Spec)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		lease, err := leases.Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return ctx.Err() // missing or unreadable: the elector creates or retries it
		}
		if changed(lease) {
			seen, observed = lease, time.Now()
		}
		if !heldByOther(lease, c.Identity) {
			return nil
		}
		w, err := leases.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", c.Name).String(),
			ResourceVersion: lease.ResourceVersion,
		})
		if err != nil {
			return ctx.Err()
		}
		done := false
		for !done {
			wait := time.Until(observed.Add(time.Duration(*seen.Spec.LeaseDurationSeconds) * time.Second))
			timer := time.NewTimer(max(wait, 0))
			select {
			case <-ctx.Done():
				timer.Stop()
				w.Stop()
				return ctx.Err()
			case ev, ok := <-w.ResultChan():
				timer.Stop()
				if !ok {
					done = true // watch ended: read the Lease again, keeping the observation
					break
				}
				l, isLease := ev.Object.(*coordv1.Lease)
				switch {
				case ev.Type == watch.Deleted:
					w.Stop()
					return nil
				case !isLease || ev.Type == watch.Error:
					done = true
				case l.Name != c.Name:
				case changed(l):
					seen, observed = l, time.Now()
					if !heldByOther(l, c.Identity) {
						w.Stop()
						return nil
					}
				}
			case <-timer.C:
				w.Stop()
				took, err := take(ctx, c, seen)
				switch {
				case took:
					log.Info("took over the leader lease of a holder that stopped renewing it",
						"previous", *seen.Spec.HolderIdentity, "unrenewed", time.Since(observed).Round(time.Millisecond))
					return nil
				case err != nil && !apierrors.IsConflict(err):
					return ctx.Err() // the elector retries
				}
				done = true // changed under us: observe again
			}
		}
		w.Stop()
	}
}

// heldByOther says whether the Lease names another candidate that has not released it.
func heldByOther(l *coordv1.Lease, identity string) bool {
	return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && *l.Spec.HolderIdentity != identity &&
		l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0
}

// take writes this candidate into the expired Lease cur, as client-go's elector records
// an acquisition, failing with a conflict if the Lease changed since cur.
func take(ctx context.Context, c Config, cur *coordv1.Lease) (bool, error) {
	now := metav1.NewMicroTime(time.Now())
	l := cur.DeepCopy()
	id, secs := c.Identity, int32(c.LeaseDuration/time.Second)
	transitions := int32(1)
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions + 1
	}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &id, &secs
	l.Spec.AcquireTime, l.Spec.RenewTime, l.Spec.LeaseTransitions = &now, &now, &transitions
	rctx, cancel := context.WithTimeout(ctx, c.RenewDeadline)
	defer cancel()
	if _, err := c.Client.Leases(c.Namespace).Update(rctx, l, metav1.UpdateOptions{}); err != nil {
		return false, err
	}
	return true, nil
}

// release gives the Lease up if it still names this candidate, as client-go's
// ReleaseOnCancel does, but only after the term's work has stopped.
func release(ctx context.Context, c Config, log *slog.Logger) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.RenewDeadline)
	defer cancel()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
		Client:     c.Client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
	}
	for range 3 {
		rec, _, err := lock.Get(rctx)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				log.Warn("release leader lease", "err", err)
			}
			return
		}
		if rec.HolderIdentity != c.Identity {
			return
		}
		now := metav1.NewTime(time.Now())
		err = lock.Update(rctx, resourcelock.LeaderElectionRecord{
			LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
		})
		if err == nil {
			log.Info("released the leader lease")
			return
		}
		if !apierrors.IsConflict(err) {
			log.Warn("release leader lease", "err", err)
			return
		}
	}
}

func backoff(base time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < maxFailureBackoff; i++ {
		d *= 2
	}
	return min(d, maxFailureBackoff)
}

func durOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Phase is what an elected component is doing.
type Phase string

// The phases. Standby and Leading are healthy; the others are not (Check).
const (
	// Starting: not campaigning yet (waiting for the API server, syncing informers).
	Starting Phase = "starting"
	// Standby: campaigning for the Lease; another candidate leads, or the API server
	// cannot be written (a standby is healthy: it takes over when it can).
	Standby Phase = "standby"
	// Leading: holds the Lease and does the work.
	Leading Phase = "leading"
	// Stopping: the leadership ended; the term's work is stopping before the next
	// campaign.
	Stopping Phase = "stopping"
	// Failed: the term's work failed; the component campaigns again after a back-off.
	Failed Phase = "failed"
	// Stopped: the component's Run returned; it does nothing any more.
	Stopped Phase = "stopped"
)

// Status is the phase of a component, safe for concurrent use. The zero value is not
// usable; make one with NewStatus.
type Status struct {
	mu     sync.Mutex
	phase  Phase
	since  time.Time
	err    error
	terms  int
	losses int
}

// NewStatus returns a Status in phase Starting.
func NewStatus() *Status { return &Status{phase: Starting, since: time.Now()} }

// Set records a phase (components that run without leader election use Leading and
// Stopped); err is the reason for Failed or Stopped, if any.
func (s *Status) Set(p Phase, err error) { s.set(p, err) }

func (s *Status) set(p Phase, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase == Stopped && p != Starting {
		return // final, until the component is started again
	}
	if p == Leading && s.phase != Leading {
		s.terms++
	}
	if p == Stopping && s.phase == Leading {
		s.losses++
	}
	if p != s.phase {
		s.since = time.Now()
	}
	s.phase, s.err = p, err
}

// Phase is the current phase.
func (s *Status) Phase() Phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase
}

// Terms counts the times the component started leading; Ended counts the terms that
// ended (leadership lost, work failed, or stopped).
func (s *Status) Terms() (terms, ended int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.terms, s.losses
}

// Check is nil while the component stands by or leads; otherwise (starting, stopping a
// term, failed, stopped) an error that says what it is doing instead and since when.
func (s *Status) Check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.phase {
	case Standby, Leading:
		return nil
	}
	msg := fmt.Sprintf("%s for %s", s.phase, time.Since(s.since).Round(time.Millisecond))
	if s.err != nil {
		msg += ": " + s.err.Error()
	}
	return errors.New(msg)
}
