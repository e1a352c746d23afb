package admitwasm

import "github.com/wasmkube/wasmkube/internal/configwatch"

// InstancesCreated is how many instances the pools of the policies in force have created
// and discarded so far (the pod-create benchmark reports those of its timed part).
func InstancesCreated(o *Policies) (created, discarded int64) {
	for _, p := range o.set.Load().policies {
		c, d := p.pool.Stats()
		created += c
		discarded += d
	}
	return created, discarded
}

// WithReloadHooks sets the tests' view of reloads: building runs after each module a
// reload loads (a test slows reloads with it), applied when a snapshot goes in force.
func WithReloadHooks(o Options, building, applied func(configwatch.Snapshot)) Options {
	o.buildHook, o.onApply = building, applied
	return o
}

// PolicyClosed reports whether the policy named name among ps was closed; ok is false
// when ps has no such policy.
func PolicyClosed(ps []*Policy, name string) (closed, ok bool) {
	for _, p := range ps {
		if p.spec.Name == name {
			return p.loaded.Closed(), true
		}
	}
	return false, false
}

// PoliciesInForce are the policies of the set in force.
func PoliciesInForce(o *Policies) []*Policy { return o.set.Load().policies }
