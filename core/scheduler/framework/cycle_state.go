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
	mu   sync.RWMutex
	data map[StateKey]StateData
	// SkipFilterPlugins and SkipScorePlugins name plugins whose PreFilter/PreScore
	// returned Skip; the runtime does not call their Filter/Score for this cycle.
	SkipFilterPlugins map[string]struct{}
	SkipScorePlugins  map[string]struct{}
}

// NewCycleState returns an empty CycleState.
func NewCycleState() *CycleState {
	return &CycleState{data: map[StateKey]StateData{}}
}

// Read returns the data stored under key.
func (c *CycleState) Read(key StateKey) (StateData, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.data[key]
	return d, ok
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, d StateData) {
	c.mu.Lock()
	c.data[key] = d
	c.mu.Unlock()
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	c.mu.Lock()
	delete(c.data, key)
	c.mu.Unlock()
}

// Clone returns a deep copy (each StateData is Cloned).
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := NewCycleState()
	for k, v := range c.data {
		n.data[k] = v.Clone()
	}
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
