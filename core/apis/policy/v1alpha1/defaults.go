package v1alpha1

import "github.com/google/go-containerregistry/pkg/name"

// DefaultSchedulerName is the profile a scheduler policy joins when it names none.
const DefaultSchedulerName = "default-scheduler"

// SetDefaults fills what a policy leaves out: mode Enforce, failurePolicy Fail, rollout
// Progressive, the pull
// policy as a container image's (Always for the tag latest or none, else IfNotPresent),
// the scheduler section of a scheduler hook, and the Deny action of a validate hook.
func SetDefaults(p *WasmPolicy) {
	s := &p.Spec
	if s.Mode == "" {
		s.Mode = ModeEnforce
	}
	if s.FailurePolicy == "" {
		s.FailurePolicy = Fail
	}
	if s.Rollout == "" {
		s.Rollout = RolloutProgressive
	}
	if s.Module.Image != "" && s.Module.PullPolicy == "" {
		s.Module.PullPolicy = PullIfNotPresent
		// A reference without a tag or digest parses as :latest.
		if r, err := name.ParseReference(s.Module.Image); err == nil {
			if t, ok := r.(name.Tag); ok && t.TagStr() == "latest" {
				s.Module.PullPolicy = PullAlways
			}
		}
	}
	switch s.Hook.Component() {
	case "scheduler":
		if s.Scheduler == nil {
			s.Scheduler = &SchedulerHook{}
		}
		if s.Scheduler.SchedulerName == "" {
			s.Scheduler.SchedulerName = DefaultSchedulerName
		}
		if s.Scheduler.Weight == nil && s.Hook == HookSchedulerScore {
			one := int32(1)
			s.Scheduler.Weight = &one
		}
	case "admission":
		if s.Hook == HookAdmissionValidate && s.Admission != nil && len(s.Admission.ValidationActions) == 0 {
			s.Admission.ValidationActions = []string{"Deny"}
		}
	}
}
