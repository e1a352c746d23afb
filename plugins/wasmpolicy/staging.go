package wasmpolicy

// Staging is what a Stager holds out of force, by policy name: the loads StagePolicies
// made, each under its policy's Key, until ApplyPolicies takes one (the release of an
// AllOrNothing rollout) or a later StagePolicies no longer lists it. T is the target's
// loaded plugin (an admission policy, a kubelet hook plugin: a compiled wasmhost.Loaded
// with its pools). It is not safe for concurrent use: a target calls it under the lock
// of its swap path.
type Staging[T any] struct {
	close func(T)
	held  map[string]staged[T]
}

type staged[T any] struct {
	key string
	v   T
}

// NewStaging returns an empty Staging whose dropped loads closeFn closes.
func NewStaging[T any](closeFn func(T)) *Staging[T] {
	return &Staging[T]{close: closeFn, held: map[string]staged[T]{}}
}

// Stage makes the held loads those of policies: one already held under the policy's Key is
// kept, any other is loaded with load (the target's own load, the one ApplyPolicies uses),
// and a held load not listed any more is closed. The result has load's error per policy.
func (s *Staging[T]) Stage(policies []*Policy, load func(*Policy) (T, error)) map[string]error {
	errs := map[string]error{}
	next := make(map[string]staged[T], len(policies))
	for _, p := range policies {
		key := p.Key()
		if h, ok := s.held[p.Name]; ok && h.key == key {
			next[p.Name] = h
			continue
		}
		v, err := load(p)
		if err != nil {
			errs[p.Name] = err
			continue
		}
		next[p.Name] = staged[T]{key: key, v: v}
	}
	for name, h := range s.held {
		if n, ok := next[name]; !ok || n.key != h.key {
			s.close(h.v)
		}
	}
	s.held = next
	return errs
}

// Take hands over the load held for the policy under key (the caller now owns it), if any.
func (s *Staging[T]) Take(name, key string) (T, bool) {
	h, ok := s.held[name]
	if !ok || h.key != key {
		var zero T
		return zero, false
	}
	delete(s.held, name)
	return h.v, true
}

// Close closes every held load (the target is closing).
func (s *Staging[T]) Close() {
	for _, h := range s.held {
		s.close(h.v)
	}
	s.held = map[string]staged[T]{}
}
