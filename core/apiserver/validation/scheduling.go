package validation

import (
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules of upstream's pkg/apis/scheduling/validation for the gang-scheduling kinds of
// scheduling.k8s.io/v1beta1 (Workload, PodGroup), with its messages and field paths, for
// what wasmkube's scheduler reads: the policy union, minCount, the workload reference.

func validateScheduling(obj runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *schedulingv1beta1.Workload:
		errs := objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateWorkloadSpec(&o.Spec, field.NewPath("spec"))...), true
	case *schedulingv1beta1.PodGroup:
		errs := objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validatePodGroupSpec(&o.Spec, field.NewPath("spec"))...), true
	}
	return nil, false
}

func validateSchedulingUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	errs, ok := validateScheduling(obj)
	if !ok {
		return nil, false
	}
	switch o := obj.(type) {
	case *schedulingv1beta1.Workload:
		ow := old.(*schedulingv1beta1.Workload)
		errs = append(errs, metaUpdate(&o.ObjectMeta, &ow.ObjectMeta)...)
		if !apiequality.Semantic.DeepEqual(o.Spec.PodGroupTemplates, ow.Spec.PodGroupTemplates) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "podGroupTemplates"), "", "field is immutable"))
		}
		if !apiequality.Semantic.DeepEqual(o.Spec.ControllerRef, ow.Spec.ControllerRef) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "controllerRef"), "", "field is immutable"))
		}
	case *schedulingv1beta1.PodGroup:
		op := old.(*schedulingv1beta1.PodGroup)
		errs = append(errs, metaUpdate(&o.ObjectMeta, &op.ObjectMeta)...)
		p := field.NewPath("spec", "schedulingPolicy")
		if (o.Spec.SchedulingPolicy.Gang == nil) != (op.Spec.SchedulingPolicy.Gang == nil) {
			errs = append(errs, field.Forbidden(p.Child("gang"), "may not be set or unset after creation"))
		}
		if (o.Spec.SchedulingPolicy.Basic == nil) != (op.Spec.SchedulingPolicy.Basic == nil) {
			errs = append(errs, field.Forbidden(p.Child("basic"), "may not be set or unset after creation"))
		}
		if !apiequality.Semantic.DeepEqual(o.Spec.WorkloadRef, op.Spec.WorkloadRef) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "workloadRef"), "", "field is immutable"))
		}
	}
	return errs, true
}

func validateWorkloadSpec(s *schedulingv1beta1.WorkloadSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r := s.ControllerRef; r != nil {
		if r.Kind == "" {
			errs = append(errs, field.Required(p.Child("controllerRef", "kind"), ""))
		}
		if r.Name == "" {
			errs = append(errs, field.Required(p.Child("controllerRef", "name"), ""))
		}
	}
	tp := p.Child("podGroupTemplates")
	switch n := len(s.PodGroupTemplates); {
	case n == 0 && len(s.CompositePodGroupTemplates) == 0:
		errs = append(errs, field.Required(tp, "must have at least one item"))
	case n > schedulingv1beta1.WorkloadMaxPodGroupTemplates:
		errs = append(errs, field.TooMany(tp, n, schedulingv1beta1.WorkloadMaxPodGroupTemplates))
	}
	seen := map[string]bool{}
	for i, t := range s.PodGroupTemplates {
		ip := tp.Index(i)
		for _, msg := range utilvalidation.IsDNS1123Label(t.Name) {
			errs = append(errs, field.Invalid(ip.Child("name"), t.Name, msg))
		}
		if seen[t.Name] {
			errs = append(errs, field.Duplicate(ip.Child("name"), t.Name))
		}
		seen[t.Name] = true
		errs = append(errs, validateSchedulingPolicy(&t.SchedulingPolicy, ip.Child("schedulingPolicy"))...)
	}
	return errs
}

func validatePodGroupSpec(s *schedulingv1beta1.PodGroupSpec, p *field.Path) field.ErrorList {
	errs := validateSchedulingPolicy(&s.SchedulingPolicy, p.Child("schedulingPolicy"))
	if r := s.WorkloadRef; r != nil {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(r.WorkloadName) {
			errs = append(errs, field.Invalid(p.Child("workloadRef", "workloadName"), r.WorkloadName, msg))
		}
		for _, msg := range utilvalidation.IsDNS1123Label(r.TemplateName) {
			errs = append(errs, field.Invalid(p.Child("workloadRef", "templateName"), r.TemplateName, msg))
		}
	}
	if s.Priority != nil && s.PriorityClassName == "" {
		// As a pod's: the number comes from the class at admission, never from the client.
		errs = append(errs, field.Forbidden(p.Child("priority"), "may be set only together with priorityClassName"))
	}
	return errs
}

// validateSchedulingPolicy: exactly one of basic and gang; gang.minCount at least 1.
func validateSchedulingPolicy(s *schedulingv1beta1.PodGroupSchedulingPolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.Basic == nil && s.Gang == nil:
		errs = append(errs, field.Required(p, "exactly one of basic or gang must be set"))
	case s.Basic != nil && s.Gang != nil:
		errs = append(errs, field.Invalid(p, "{basic, gang}", "exactly one of basic or gang must be set"))
	}
	if s.Gang != nil && s.Gang.MinCount < 1 {
		errs = append(errs, field.Invalid(p.Child("gang", "minCount"), s.Gang.MinCount, fmt.Sprintf("must be greater than or equal to %d", 1)))
	}
	return errs
}
