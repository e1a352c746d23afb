package framework

import "sync"

// StateKey names one entry of a CycleState.
type StateKey string

// StateData is what a plugin stores in a CycleState. Clone must return a copy that is
// safe to change independently (preemption simulates on clones).
type StateData interface {
	Clone() StateData
}

// CycleState is per-pod, per-cycle scratch space that plugins write in PreFilter/PreScore
// and read in later extension points. It is safe for concurrent use: Filter and Score run
// in parallel over nodes. Wasm plugins keep their cycle state here as bytes, so any pooled
// instance can serve any call of the cycle.
type CycleState struct {
	// data is a sync.Map: written a few times per cycle (PreFilter, PreScore), read for
	// every node by parallel workers, where an RWMutex's shared counter would bounce
	// between cores on every read.
	data sync.Map
	// SkipFilterPlugins and SkipScorePlugins name plugins whose PreFilter/PreScore
	// returned Skip; the runtime does not call their Filter/Score for this cycle.
	SkipFilterPlugins map[string]struct{}
	SkipScorePlugins  map[string]struct{}
}

// NewCycleState returns an empty CycleState.
func NewCycleState() *CycleState {
	return &CycleState{}
}

// Read returns the data stored under key.
func (c *CycleState) Read(key StateKey) (StateData, bool) {
	d, ok := c.data.Load(key)
	if !ok {
		return nil, false
	}
	return d.(StateData), true
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, d StateData) {
	c.data.Store(key, d)
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	c.data.Delete(key)
}

// Clone returns a deep copy (each StateData is Cloned).
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	n := NewCycleState()
	c.data.Range(func(k, v any) bool {
		n.data.Store(k, v.(StateData).Clone())
		return true
	})
	n.SkipFilterPlugins = cloneSet(c.SkipFilterPlugins)
	n.SkipScorePlugins = cloneSet(c.SkipScorePlugins)
	return n
}

func cloneSet(s map[string]struct{}) map[string]struct{} {
	if s == nil {
		return nil
	}
	n := make(map[string]struct{}, len(s))
	for k := range s {
		n[k] = struct{}{}
	}
	return n
}
