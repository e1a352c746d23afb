// Package validation checks WasmPolicy objects (policy.wasmkube.io/v1alpha1). Every error
// names its field (spec.module.image, spec.admission.rules[0].operations[1], ...), and
// every bad field is reported, not only the first.
package validation

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// Limits of a policy's fields.
const (
	MaxTimeout     = 30 * time.Second
	MinMemoryLimit = 64 << 10
	MaxMemoryLimit = 4 << 30
	MaxPool        = 1024
)

var (
	hooks       = sets.New(policyv1alpha1.Hooks()...)
	modes       = sets.New(policyv1alpha1.ModeEnforce, policyv1alpha1.ModeMonitor)
	failures    = sets.New(policyv1alpha1.Fail, policyv1alpha1.Ignore)
	rollouts    = sets.New(policyv1alpha1.RolloutProgressive, policyv1alpha1.RolloutAllOrNothing)
	components  = sets.New(policyv1alpha1.ComponentAPIServer, policyv1alpha1.ComponentScheduler, policyv1alpha1.ComponentKubelet)
	pulls       = sets.New(policyv1alpha1.PullAlways, policyv1alpha1.PullIfNotPresent, policyv1alpha1.PullNever)
	operations  = sets.New("CREATE", "UPDATE", "DELETE", "CONNECT", "*")
	actions     = sets.New("Deny", "Warn", "Audit")
	schedPoints = sets.New("PreFilter", "Filter", "PostFilter", "PreScore", "Score")
	nodeCaps    = sets.New("pod-network")
	phases      = sets.New(policyv1alpha1.PhasePending, policyv1alpha1.PhaseFetching, policyv1alpha1.PhaseStaged, policyv1alpha1.PhaseActive, policyv1alpha1.PhaseFailed)
	sha256Hex   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

func names[T ~string](s sets.Set[T]) []string {
	out := make([]string, 0, s.Len())
	for _, v := range sets.List(s) {
		out = append(out, string(v))
	}
	return out
}

// ValidateSpec checks a WasmPolicy's spec; fld is its path ("spec").
func ValidateSpec(s *policyv1alpha1.WasmPolicySpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.Hook == "":
		errs = append(errs, field.Required(fld.Child("hook"), "one of "+strings.Join(hookNames(), ", ")))
	case !hooks.Has(s.Hook):
		errs = append(errs, field.NotSupported(fld.Child("hook"), s.Hook, hookNames()))
	}
	if s.Mode != "" && !modes.Has(s.Mode) {
		errs = append(errs, field.NotSupported(fld.Child("mode"), s.Mode, names(modes)))
	}
	if s.FailurePolicy != "" && !failures.Has(s.FailurePolicy) {
		errs = append(errs, field.NotSupported(fld.Child("failurePolicy"), s.FailurePolicy, names(failures)))
	}
	if s.Rollout != "" && !rollouts.Has(s.Rollout) {
		errs = append(errs, field.NotSupported(fld.Child("rollout"), s.Rollout, names(rollouts)))
	}
	if s.Revision != nil && *s.Revision < 1 {
		errs = append(errs, field.Invalid(fld.Child("revision"), *s.Revision, "must be a revision number (1 or more; wasmkube policy history NAME lists them)"))
	}
	errs = append(errs, validateModule(&s.Module, fld.Child("module"))...)
	if s.Settings != nil && len(s.Settings.Raw) > 0 && s.Settings.Raw[0] != '{' && s.Settings.Raw[0] != '[' && string(s.Settings.Raw) != "null" {
		// Scalars are valid JSON, but every SDK's args are an object or an array.
		errs = append(errs, field.Invalid(fld.Child("settings"), string(s.Settings.Raw), "must be a JSON object or array"))
	}
	if s.Timeout != nil && (s.Timeout.Duration <= 0 || s.Timeout.Duration > MaxTimeout) {
		errs = append(errs, field.Invalid(fld.Child("timeout"), s.Timeout.Duration.String(), fmt.Sprintf("must be more than 0 and at most %s", MaxTimeout)))
	}
	if s.MemoryLimit != nil {
		if v := s.MemoryLimit.Value(); v < MinMemoryLimit || v > MaxMemoryLimit {
			errs = append(errs, field.Invalid(fld.Child("memoryLimit"), s.MemoryLimit.String(), "must be between 64Ki and 4Gi"))
		}
	}
	if s.Pool != nil && (*s.Pool < 1 || *s.Pool > MaxPool) {
		errs = append(errs, field.Invalid(fld.Child("pool"), *s.Pool, fmt.Sprintf("must be between 1 and %d", MaxPool)))
	}
	comp := s.Hook.Component()
	for _, sec := range []struct {
		name string
		set  bool
	}{{"scheduler", s.Scheduler != nil}, {"admission", s.Admission != nil}, {"kubelet", s.Kubelet != nil}} {
		if sec.set && comp != "" && sec.name != comp {
			errs = append(errs, field.Forbidden(fld.Child(sec.name), fmt.Sprintf("may not be set for hook %s (set %s instead)", s.Hook, comp)))
		}
	}
	switch comp {
	case "scheduler":
		if s.Scheduler != nil {
			errs = append(errs, validateScheduler(s.Hook, s.Scheduler, fld.Child("scheduler"))...)
		}
	case "admission":
		if s.Admission == nil {
			errs = append(errs, field.Required(fld.Child("admission"), "an admission hook needs its rules"))
		} else {
			errs = append(errs, validateAdmission(s.Hook, s.Admission, fld.Child("admission"))...)
		}
	case "kubelet":
		if s.Kubelet == nil {
			errs = append(errs, field.Required(fld.Child("kubelet"), "a kubelet hook needs its hookName"))
		} else {
			errs = append(errs, validateKubelet(s.Kubelet, fld.Child("kubelet"))...)
		}
	}
	return errs
}

func hookNames() []string {
	hs := policyv1alpha1.Hooks()
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = string(h)
	}
	return out
}

func validateModule(m *policyv1alpha1.ModuleSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case m.Image == "" && m.File == "":
		errs = append(errs, field.Required(fld, "one of image and file"))
	case m.Image != "" && m.File != "":
		errs = append(errs, field.Forbidden(fld.Child("file"), "may not be set together with image"))
	}
	if m.Image != "" {
		r, err := name.ParseReference(m.Image, name.StrictValidation)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(fld.Child("image"), m.Image, "must be REGISTRY/REPO:TAG or REGISTRY/REPO@sha256:<64 hex>: "+err.Error()))
		case !namesRegistry(m.Image):
			// Docker Hub is never implied: a policy names its registry.
			errs = append(errs, field.Invalid(fld.Child("image"), m.Image, "must name its registry (REGISTRY/REPO:TAG, e.g. 127.0.0.1:5000/policies/require-labels:v1)"))
		default:
			if d, ok := r.(name.Digest); ok && !strings.HasPrefix(d.DigestStr(), "sha256:") {
				errs = append(errs, field.Invalid(fld.Child("image"), m.Image, "the digest must be sha256"))
			}
		}
	}
	if m.File != "" {
		if !path.IsAbs(m.File) || path.Clean(m.File) != m.File {
			errs = append(errs, field.Invalid(fld.Child("file"), m.File, "must be an absolute, clean path (no .., no trailing /)"))
		}
		if m.PullPolicy != "" {
			errs = append(errs, field.Forbidden(fld.Child("pullPolicy"), "applies to image only"))
		}
		if len(m.ImagePullSecrets) > 0 {
			errs = append(errs, field.Forbidden(fld.Child("imagePullSecrets"), "applies to image only"))
		}
	}
	if m.SHA256 != "" && !sha256Hex.MatchString(m.SHA256) {
		errs = append(errs, field.Invalid(fld.Child("sha256"), m.SHA256, "must be 64 lowercase hex digits (the sha256 of the module's bytes)"))
	}
	if m.PullPolicy != "" && !pulls.Has(m.PullPolicy) {
		errs = append(errs, field.NotSupported(fld.Child("pullPolicy"), m.PullPolicy, names(pulls)))
	}
	for i, s := range m.ImagePullSecrets {
		p := fld.Child("imagePullSecrets").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(s.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), "a WasmPolicy is cluster-scoped: name the Secret's namespace"))
		} else {
			for _, msg := range utilvalidation.IsDNS1123Label(s.Namespace) {
				errs = append(errs, field.Invalid(p.Child("namespace"), s.Namespace, msg))
			}
		}
	}
	return errs
}

// namesRegistry: the reference's first component is a registry (has a dot or a port, or
// is localhost), as the distribution reference grammar tells them from repository names.
func namesRegistry(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}

func validateScheduler(h policyv1alpha1.Hook, s *policyv1alpha1.SchedulerHook, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.SchedulerName != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(s.SchedulerName) {
			errs = append(errs, field.Invalid(fld.Child("schedulerName"), s.SchedulerName, msg))
		}
	}
	if s.Weight != nil {
		switch {
		case h != policyv1alpha1.HookSchedulerScore:
			errs = append(errs, field.Forbidden(fld.Child("weight"), "applies to scheduler.score only"))
		case *s.Weight < 1 || *s.Weight > 100:
			errs = append(errs, field.Invalid(fld.Child("weight"), *s.Weight, "must be between 1 and 100"))
		}
	}
	seen := sets.New[string]()
	for i, p := range s.ExtensionPoints {
		f := fld.Child("extensionPoints").Index(i)
		switch {
		case !schedPoints.Has(p):
			errs = append(errs, field.NotSupported(f, p, sets.List(schedPoints)))
		case seen.Has(p):
			errs = append(errs, field.Duplicate(f, p))
		}
		seen.Insert(p)
	}
	return errs
}

func validateAdmission(h policyv1alpha1.Hook, a *policyv1alpha1.AdmissionHook, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(a.Rules) == 0 {
		errs = append(errs, field.Required(fld.Child("rules"), "the policy sees only the requests its rules match"))
	}
	for i, r := range a.Rules {
		p := fld.Child("rules").Index(i)
		for _, l := range []struct {
			name string
			vals []string
		}{{"apiGroups", r.APIGroups}, {"apiVersions", r.APIVersions}, {"resources", r.Resources}, {"operations", r.Operations}} {
			if len(l.vals) == 0 {
				errs = append(errs, field.Required(p.Child(l.name), `at least one ("*" for any)`))
			}
		}
		for j, v := range r.APIVersions {
			if v == "" {
				errs = append(errs, field.Required(p.Child("apiVersions").Index(j), ""))
			}
		}
		for j, v := range r.Resources {
			if v == "" || strings.Count(v, "/") > 1 {
				errs = append(errs, field.Invalid(p.Child("resources").Index(j), v, `must be RESOURCE or RESOURCE/SUBRESOURCE ("*" and "*/*" for any)`))
			}
		}
		for j, v := range r.Operations {
			if !operations.Has(v) {
				errs = append(errs, field.NotSupported(p.Child("operations").Index(j), v, sets.List(operations)))
			}
		}
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	if a.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(a.NamespaceSelector, opts, fld.Child("namespaceSelector"))...)
	}
	if a.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(a.ObjectSelector, opts, fld.Child("objectSelector"))...)
	}
	if len(a.ValidationActions) > 0 && h != policyv1alpha1.HookAdmissionValidate {
		errs = append(errs, field.Forbidden(fld.Child("validationActions"), "applies to admission.validate only"))
	}
	seen := sets.New[string]()
	for i, v := range a.ValidationActions {
		f := fld.Child("validationActions").Index(i)
		switch {
		case !actions.Has(v):
			errs = append(errs, field.NotSupported(f, v, sets.List(actions)))
		case seen.Has(v):
			errs = append(errs, field.Duplicate(f, v))
		}
		seen.Insert(v)
	}
	if seen.Has("Deny") && seen.Has("Warn") {
		errs = append(errs, field.Invalid(fld.Child("validationActions"), a.ValidationActions, "Deny and Warn may not be used together"))
	}
	errs = append(errs, validateCapabilities(a.Capabilities, nil, fld.Child("capabilities"))...)
	errs = append(errs, ValidateMatchConditions(a.MatchConditions, fld.Child("matchConditions"))...)
	return errs
}

func validateKubelet(k *policyv1alpha1.KubeletHook, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if k.HookName == "" {
		errs = append(errs, field.Required(fld.Child("hookName"), "the name pods ask for"))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Label(k.HookName) {
			errs = append(errs, field.Invalid(fld.Child("hookName"), k.HookName, msg))
		}
	}
	if k.NodeSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(k.NodeSelector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("nodeSelector"))...)
	}
	return append(errs, validateCapabilities(k.Capabilities, nodeCaps, fld.Child("capabilities"))...)
}

// validateCapabilities checks for empty and repeated names, and for names outside known
// when it is set.
func validateCapabilities(caps []string, known sets.Set[string], fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range caps {
		f := fld.Index(i)
		switch {
		case c == "":
			errs = append(errs, field.Required(f, ""))
		case known != nil && !known.Has(c):
			errs = append(errs, field.NotSupported(f, c, sets.List(known)))
		case seen.Has(c):
			errs = append(errs, field.Duplicate(f, c))
		}
		seen.Insert(c)
	}
	return errs
}

// ValidateStatus checks what components and the controller write in status.
func ValidateStatus(s *policyv1alpha1.WasmPolicyStatus, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(fld.Child("observedGeneration"), s.ObservedGeneration, "must not be negative"))
	}
	if s.ReadyComponents < 0 || s.TargetedComponents < 0 || s.ReadyComponents > s.TargetedComponents {
		errs = append(errs, field.Invalid(fld.Child("readyComponents"), s.ReadyComponents, fmt.Sprintf("must be between 0 and targetedComponents (%d)", s.TargetedComponents)))
	}
	if hex, ok := strings.CutPrefix(s.Digest, "sha256:"); s.Digest != "" && (!ok || !sha256Hex.MatchString(hex)) {
		errs = append(errs, field.Invalid(fld.Child("digest"), s.Digest, "must be sha256:<64 hex>"))
	}
	if s.Revision < 0 {
		errs = append(errs, field.Invalid(fld.Child("revision"), s.Revision, "must not be negative"))
	}
	if s.ResolvedGeneration < 0 {
		errs = append(errs, field.Invalid(fld.Child("resolvedGeneration"), s.ResolvedGeneration, "must not be negative"))
	}
	if s.ReleasedGeneration < 0 {
		errs = append(errs, field.Invalid(fld.Child("releasedGeneration"), s.ReleasedGeneration, "must not be negative"))
	}
	for i := range s.Components {
		errs = append(errs, ValidateComponentStatus(&s.Components[i], fld.Child("components").Index(i))...)
	}
	errs = append(errs, metav1validation.ValidateConditions(s.Conditions, fld.Child("conditions"))...)
	return errs
}

// ValidateComponentStatus checks one component's status (in a policy's status.components
// or a WasmPolicyReport).
func ValidateComponentStatus(c *policyv1alpha1.ComponentStatus, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	}
	if !components.Has(c.Component) {
		errs = append(errs, field.NotSupported(fld.Child("component"), c.Component, sets.List(components)))
	}
	if !phases.Has(c.Phase) {
		errs = append(errs, field.NotSupported(fld.Child("phase"), c.Phase, names(phases)))
	}
	if c.Mode != "" && !modes.Has(c.Mode) {
		errs = append(errs, field.NotSupported(fld.Child("mode"), c.Mode, names(modes)))
	}
	if c.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(fld.Child("observedGeneration"), c.ObservedGeneration, "must not be negative"))
	}
	return errs
}

// ValidateReport checks a WasmPolicyReport: the policy it speaks of and the component's
// status (its metadata is the caller's).
func ValidateReport(r *policyv1alpha1.WasmPolicyReport) field.ErrorList {
	var errs field.ErrorList
	if r.Policy == "" {
		errs = append(errs, field.Required(field.NewPath("policy"), "the WasmPolicy's name"))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(r.Policy) {
			errs = append(errs, field.Invalid(field.NewPath("policy"), r.Policy, msg))
		}
	}
	return append(errs, ValidateComponentStatus(&r.Status, field.NewPath("status"))...)
}
