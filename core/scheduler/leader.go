package scheduler

import (
	"context"

	"github.com/wasmkube/wasmkube/core/leaderelect"
)

// runLeaderElection schedules in terms: each time this scheduler takes the Lease it
// schedules until the leadership ends, stops (the loop and every binding and status
// write the term started), and campaigns again with a fresh elector
// (core/leaderelect). The informers, the cache and the queue live across terms: the
// informers keep them in step with the API while this scheduler stands by, as for a
// standby that never led, and what a term leaves in them is settled before the next
// one starts (assumed pods are bound or forgotten, interrupted pods are back in the
// queue).
func (s *Scheduler) runLeaderElection(ctx context.Context) error {
	return leaderelect.Run(ctx, leaderelect.Config{
		Client:    s.client.CoordinationV1(),
		Namespace: s.opts.LeaseNamespace, Name: s.opts.LeaseName, Identity: s.opts.Identity,
		LeaseDuration: s.opts.LeaseDuration, RenewDeadline: s.opts.RenewDeadline, RetryPeriod: s.opts.RetryPeriod,
		Component: "scheduler", Logger: s.log, Status: s.status,
	}, func(lctx context.Context) error {
		s.lead(lctx)
		return nil
	})
}

// lead schedules until ctx ends, then waits for the bindings and status writes of the
// cycles it ran, so that nothing of this term acts after it.
func (s *Scheduler) lead(ctx context.Context) {
	s.leading.Store(true)
	s.metrics.leader.Set(1)
	s.loop(ctx)
	s.leading.Store(false)
	s.metrics.leader.Set(0)
	s.bindWG.Wait()
}
