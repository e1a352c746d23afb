package admitwasm

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
