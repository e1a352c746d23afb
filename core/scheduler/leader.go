package scheduler

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLostLeadership is returned by Run when another scheduler took the lease.
var ErrLostLeadership = errors.New("scheduler: lost the leader lease")

func (s *Scheduler) runLeaderElection(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: s.opts.LeaseNamespace, Name: s.opts.LeaseName},
		Client:     s.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: s.opts.Identity},
	}
	ld, rd, rp := s.opts.LeaseDuration, s.opts.RenewDeadline, s.opts.RetryPeriod
	if ld == 0 {
		ld = 15 * time.Second
	}
	if rd == 0 {
		rd = 10 * time.Second
	}
	if rp == 0 {
		rp = 2 * time.Second
	}
	lost := false
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   ld,
		RenewDeadline:   rd,
		RetryPeriod:     rp,
		ReleaseOnCancel: true,
		Name:            s.opts.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				s.log.Info("became leader", "identity", s.opts.Identity)
				s.leading.Store(true)
				s.metrics.leader.Set(1)
				s.loop(lctx)
			},
			OnStoppedLeading: func() {
				s.leading.Store(false)
				s.metrics.leader.Set(0)
				if ctx.Err() == nil {
					lost = true
					s.log.Error("lost leadership", "identity", s.opts.Identity)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	s.log.Info("waiting for the leader lease", "lease", s.opts.LeaseNamespace+"/"+s.opts.LeaseName, "identity", s.opts.Identity)
	le.Run(ctx)
	if lost {
		return ErrLostLeadership
	}
	return nil
}
