package wasmpolicy

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// Tiers of a policy, as metrics and logs name them.
const (
	// TierFile: declared in the component's config file; evaluated first, not deletable
	// through the API.
	TierFile = "file"
	// TierAPI: a WasmPolicy object.
	TierAPI = "api"
)

// Policy is one WasmPolicy as a component loads it: the object's spec with its module
// resolved to bytes. Targets map it onto their kind's spec (ModuleSpec gives the part
// every kind shares).
type Policy struct {
	// Name is the WasmPolicy's name; Generation its metadata.generation.
	Name       string
	Generation int64
	Spec       policyv1alpha1.WasmPolicySpec
	// Module is the resolved module: its file (a path on this host or in the module
	// cache) and bytes; Digest the manifest digest of an image, or sha256:<hex of the
	// bytes> of a file.
	Module modulespec.Module
	Digest string
}

// Monitor reports whether the policy's verdicts are only recorded.
func (p *Policy) Monitor() bool { return p.Spec.Mode == policyv1alpha1.ModeMonitor }

// ModuleSpec is the module declaration every kind embeds: the policy's name, its module's
// path, failurePolicy, timeout, memoryLimit and pool. Zero values are the kind's defaults.
func (p *Policy) ModuleSpec() modulespec.Spec {
	s := modulespec.Spec{Name: p.Name, Path: p.Module.Path, FailurePolicy: string(p.Spec.FailurePolicy)}
	if p.Spec.Timeout != nil {
		s.Timeout = *p.Spec.Timeout
	}
	if p.Spec.MemoryLimit != nil {
		s.MemoryLimit = p.Spec.MemoryLimit.DeepCopy()
	}
	if p.Spec.Pool != nil {
		s.Pool = int(*p.Spec.Pool)
	}
	return s
}

// Settings are the module's args as JSON (nil: none).
func (p *Policy) Settings() json.RawMessage {
	if p.Spec.Settings == nil || len(p.Spec.Settings.Raw) == 0 || string(p.Spec.Settings.Raw) == "null" {
		return nil
	}
	return json.RawMessage(p.Spec.Settings.Raw)
}

// Key identifies what a target loads from the policy: the whole spec (mode included) and
// the module's bytes. An unchanged key keeps the loaded plugin, its instances warm.
func (p *Policy) Key() string { return p.Module.Key(p.Spec) }

// Stager is a Target that can load a policy without putting it in force, for rollout
// AllOrNothing. A Target without it (one that runs nothing, as a test's) stages a policy by
// fetching it alone.
type Stager interface {
	// StagePolicies loads each policy as ApplyPolicies would (compile, ABI check,
	// wasmkube_init with the settings, smoke calls) and holds it out of force: a later
	// ApplyPolicies that lists the policy with the same Key puts the held load in force
	// without loading it again. A held load that this call does not list (same name and
	// Key) is closed. The result has an error for each policy that did not load.
	StagePolicies(policies []*Policy) map[string]error
}

// Target is a component's swap path for the API tier: the same fetch-free part of the file
// tier's (compile, check against the ABI, smoke-call, replace between calls).
type Target interface {
	// ApplyPolicies puts policies in force as the component's API tier, replacing the
	// previous API tier as a whole between calls. A policy that fails to load keeps the
	// revision of it in force before, if any (its last good one); a policy not in the list
	// is removed. The result has an error for each policy that is not in force as given.
	ApplyPolicies(policies []*Policy) map[string]error
}

// Placement is what decides whether a component loads a policy: which component it is and,
// for a scheduler, its profiles; for a kubelet, its Node's labels.
type Placement struct {
	// Component is ComponentAPIServer, ComponentScheduler or ComponentKubelet.
	Component string
	// SchedulerNames are the profiles a scheduler runs.
	SchedulerNames []string
	// NodeLabels are a kubelet's Node's labels (nil: its Node is not known yet, and no
	// kubelet policy is selected).
	NodeLabels map[string]string
}

// hookComponent is the Hook.Component of a component's hooks.
func hookComponent(component string) string {
	switch component {
	case ComponentAPIServer:
		return "admission"
	default:
		return component
	}
}

// Selects reports whether pl loads p: a hook of its component, and for a scheduler a
// profile it runs, for a kubelet a nodeSelector its Node matches.
func (pl Placement) Selects(p *policyv1alpha1.WasmPolicy) bool {
	if p.Spec.Hook.Component() != hookComponent(pl.Component) {
		return false
	}
	switch pl.Component {
	case ComponentScheduler:
		name := policyv1alpha1.DefaultSchedulerName
		if s := p.Spec.Scheduler; s != nil && s.SchedulerName != "" {
			name = s.SchedulerName
		}
		return slices.Contains(pl.SchedulerNames, name)
	case ComponentKubelet:
		if pl.NodeLabels == nil {
			return false
		}
		if k := p.Spec.Kubelet; k != nil && k.NodeSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(k.NodeSelector)
			if err != nil {
				return false // validation refuses it; nothing to load
			}
			return sel.Matches(labels.Set(pl.NodeLabels))
		}
	}
	return true
}

// ConflictError: a policy of the file tier has the API policy's name; the file tier wins.
type ConflictError struct {
	Policy string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the component's config file declares a policy named %q: the file tier wins and the WasmPolicy is not loaded (rename one of them)", e.Policy)
}

// ModuleRef is the reference a component fetches p's image by, for p's current
// generation: the image itself when it names a digest, or when its pullPolicy is Never
// (the component's cache alone answers; nothing is asked of a registry, so nothing was
// resolved); else the digest the wasmpolicy controller resolved the tag to, once
// status.resolvedGeneration is p's generation. ok is false while that is not so: the
// component waits (Pending) rather than ask the registry itself, so that every component
// runs what was resolved once. A file module has no reference ("", true).
func ModuleRef(p *policyv1alpha1.WasmPolicy) (ref string, ok bool) {
	img := p.Spec.Module.Image
	if img == "" {
		return "", true
	}
	r, err := name.ParseReference(img, name.StrictValidation)
	if err != nil {
		return img, true // the fetch names the error
	}
	if _, byDigest := r.(name.Digest); byDigest || p.Spec.Module.PullPolicy == policyv1alpha1.PullNever {
		return img, true
	}
	if p.Status.ResolvedGeneration != p.Generation || p.Status.Digest == "" {
		return "", false
	}
	return r.Context().Digest(p.Status.Digest).String(), true
}

// Held reports whether a component must hold p's current generation out of force: rollout
// AllOrNothing and the generation not yet released by the controller.
func Held(p *policyv1alpha1.WasmPolicy) bool {
	return p.Spec.Rollout == policyv1alpha1.RolloutAllOrNothing && p.Status.ReleasedGeneration != p.Generation
}
