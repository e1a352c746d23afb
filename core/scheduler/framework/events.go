package framework

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// ActionType is what happened to an object, as a bit set (upstream's framework.ActionType,
// coarser: wasmkube tells adds, deletes and updates apart, not which field an update
// changed).
type ActionType int32

// The actions.
const (
	Add ActionType = 1 << iota
	Delete
	Update
	// All is every action.
	All = Add | Delete | Update
)

// Resources whose events the scheduler watches and may requeue pods on.
const (
	// ResourceNode: a node added, changed in a way that matters to scheduling (labels,
	// taints, allocatable, unschedulable), or deleted.
	ResourceNode = "Node"
	// ResourcePod: a pod bound to a node added, or deleted or finished (its room is free).
	ResourcePod = "Pod"
)

// ClusterEvent is one change of the cluster that may make an unschedulable pod fit.
type ClusterEvent struct {
	Resource string
	Action   ActionType
}

// Matches reports whether e (a registration) covers the event ev.
func (e ClusterEvent) Matches(ev ClusterEvent) bool {
	return (e.Resource == ev.Resource || e.Resource == "*") && e.Action&ev.Action != 0
}

// QueueingHint is a plugin's verdict on whether an event may make a pod it rejected
// schedulable.
type QueueingHint int

const (
	// Queue: the event may help; the pod leaves the unschedulable pool.
	Queue QueueingHint = iota
	// QueueSkip: the event cannot help this pod.
	QueueSkip
)

// QueueingHintFn decides for one pod the plugin rejected and one event. oldObj is nil for
// an Add, newObj nil for a Delete. An error counts as Queue (as upstream: a hint that
// fails must not strand a pod).
type QueueingHintFn func(ctx context.Context, pod *v1.Pod, ev ClusterEvent, oldObj, newObj any) (QueueingHint, error)

// ClusterEventWithHint is one event a plugin registers, with its hint (nil: always Queue).
type ClusterEventWithHint struct {
	Event          ClusterEvent
	QueueingHintFn QueueingHintFn
}

// EnqueueExtensions is implemented by plugins that say which events can make a pod they
// rejected schedulable. A pod such a plugin rejected leaves the unschedulable pool only
// on a registered event whose hint answers Queue (or when its 5 minutes there end). A
// plugin without it is asked nothing: any event moves the pods it rejected.
type EnqueueExtensions interface {
	Plugin
	EventsToRegister(ctx context.Context) ([]ClusterEventWithHint, error)
}
