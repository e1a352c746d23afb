package framework

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// MaxPermitTimeout caps the wait a Permit plugin may ask for, as upstream's (15 minutes):
// a pod is never held at Permit for longer.
const MaxPermitTimeout = 15 * time.Minute

// WaitingPod is a pod held at Permit: it was assumed on a node and reserved, and waits
// until every plugin that answered Wait allows it, one rejects it, or a plugin's wait
// times out (a rejection too). As upstream's framework.WaitingPod.
type WaitingPod interface {
	// GetPod is the pod as assumed (spec.nodeName set).
	GetPod() *v1.Pod
	// NodeName is the node the pod is reserved on.
	NodeName() string
	// GetPendingPlugins names the plugins that still hold the pod.
	GetPendingPlugins() []string
	// Allow releases the pod from plugin's wait; the pod goes on to PreBind once no plugin
	// holds it. It reports whether plugin held the pod.
	Allow(plugin string) bool
	// Reject ends the wait of the pod: it is unreserved and requeued with msg as the reason.
	Reject(plugin, msg string)
}

// WaitingPodHandle is the part of a profile's Handle that sees the pods held at Permit:
// a Permit plugin (a gang's last member) allows or rejects the others by UID.
type WaitingPodHandle interface {
	// IterateOverWaitingPods calls fn for every waiting pod of the profile.
	IterateOverWaitingPods(fn func(WaitingPod))
	// GetWaitingPod returns the waiting pod with uid, or nil.
	GetWaitingPod(uid types.UID) WaitingPod
}

// chosenNodeKey holds the node a cycle chose (set before Reserve), for the binding-cycle
// plugins that need more than its name and must not read the snapshot, which the next
// cycle updates in place.
const chosenNodeKey StateKey = "wasmkube.io/chosen-node"

type chosenNode struct{ n *v1.Node }

func (c chosenNode) Clone() StateData { return c }

// SetChosenNode records the node the cycle chose (the informer's object: never changed).
func SetChosenNode(s *CycleState, n *v1.Node) { s.Write(chosenNodeKey, chosenNode{n}) }

// ChosenNode returns the node recorded by SetChosenNode, or nil.
func ChosenNode(s *CycleState) *v1.Node {
	if s == nil {
		return nil
	}
	d, ok := s.Read(chosenNodeKey)
	if !ok {
		return nil
	}
	c, _ := d.(chosenNode)
	return c.n
}
