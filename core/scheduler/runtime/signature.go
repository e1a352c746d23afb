package runtime

import (
	"context"
	"encoding/json"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// signers are the profile's plugins whose verdicts a pod's signature must cover: those
// at PreFilter, Filter, PreScore and Score (upstream's candidates), each once.
type signers struct {
	plugins []framework.SignPlugin
	// unsupported name the plugins at those points that cannot sign at all: while
	// there is one, the profile never batches (as upstream).
	unsupported []string
}

func (f *Framework) buildSigners() {
	seen := map[string]bool{}
	add := func(p framework.Plugin) {
		if seen[p.Name()] {
			return
		}
		seen[p.Name()] = true
		if sp, ok := p.(framework.SignPlugin); ok {
			f.signers.plugins = append(f.signers.plugins, sp)
		} else {
			f.signers.unsupported = append(f.signers.unsupported, p.Name())
		}
	}
	for _, p := range f.preFilter {
		add(p)
	}
	for _, p := range f.filter {
		add(p.p)
	}
	for _, p := range f.preScore {
		add(p)
	}
	for _, p := range f.score {
		add(p.p)
	}
	sort.Strings(f.signers.unsupported)
}

// Unsignable explains why a pod has no signature.
type Unsignable struct {
	// Plugin is the plugin that could not sign the pod (or the first plugin of the
	// profile that cannot sign at all).
	Plugin string
	Reason string
}

// SignPod returns the pod's scheduling signature: two pods with equal signatures get
// the same Filter verdict and raw Score from this profile on any node in any state. It
// returns nil and why when the pod is unsignable: a plugin said so (or failed), or a
// plugin of the profile cannot sign at all.
func (f *Framework) SignPod(ctx context.Context, pod *v1.Pod) ([]byte, *Unsignable) {
	if len(f.signers.unsupported) > 0 {
		return nil, &Unsignable{Plugin: f.signers.unsupported[0], Reason: "the plugin does not sign pods (framework.SignPlugin): the profile does not batch"}
	}
	sig := map[string]any{framework.SchedulerNameSignerName: f.profile}
	for _, p := range f.signers.plugins {
		frags, st := p.SignPod(ctx, pod)
		if !st.IsSuccess() {
			return nil, &Unsignable{Plugin: p.Name(), Reason: st.Message()}
		}
		for _, fr := range frags {
			sig[fr.Key] = fr.Value
		}
	}
	b, err := json.Marshal(sig)
	if err != nil {
		return nil, &Unsignable{Reason: "signature: " + err.Error()}
	}
	return b, nil
}
