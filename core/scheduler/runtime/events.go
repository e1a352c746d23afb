package runtime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// registerEvents asks every plugin that implements framework.EnqueueExtensions once,
// when the profile is built, which events can help a pod it rejected.
func (f *Framework) registerEvents(ctx context.Context) error {
	for name, p := range f.plugins {
		ext, ok := p.(framework.EnqueueExtensions)
		if !ok {
			continue
		}
		evs, err := ext.EventsToRegister(ctx)
		if err != nil {
			return fmt.Errorf("profile %q: plugin %q: events to register: %w", f.profile, name, err)
		}
		if evs == nil {
			continue // registers nothing: asked nothing, as a plugin without the method
		}
		if f.events == nil {
			f.events = map[string][]framework.ClusterEventWithHint{}
		}
		f.events[name] = evs
	}
	return nil
}

// HintResult is what QueueingHint decided, with the plugin that decided it.
type HintResult struct {
	Queue  bool
	Plugin string
	// Err is a hint's failure (the pod is queued anyway).
	Err error
}

// QueueingHint decides whether ev may make pod schedulable again, given the plugins that
// rejected it in its last attempt: Queue as soon as one of them may be helped (it has no
// registrations at all, or a registration matching ev whose hint answers Queue or fails);
// Skip when every one of them registered events and none of its registrations for ev
// answers Queue. A pod no plugin is recorded against is always queued.
func (f *Framework) QueueingHint(ctx context.Context, pod *v1.Pod, rejectors map[string]struct{}, ev framework.ClusterEvent, oldObj, newObj any) HintResult {
	if len(rejectors) == 0 {
		return HintResult{Queue: true}
	}
	for name := range rejectors {
		regs, ok := f.events[name]
		if !ok {
			return HintResult{Queue: true, Plugin: name}
		}
		for _, r := range regs {
			if !r.Event.Matches(ev) {
				continue
			}
			if r.QueueingHintFn == nil {
				return HintResult{Queue: true, Plugin: name}
			}
			h, err := r.QueueingHintFn(ctx, pod, ev, oldObj, newObj)
			if err != nil {
				return HintResult{Queue: true, Plugin: name, Err: err}
			}
			if h == framework.Queue {
				return HintResult{Queue: true, Plugin: name}
			}
		}
	}
	return HintResult{}
}
