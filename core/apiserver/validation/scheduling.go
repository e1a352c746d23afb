package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
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

// validateSchedulingUpdate adds the update rules of upstream's declarative tags
// (+k8s:immutable, +k8s:update=NoSet/NoUnset/NoAddItem/NoRemoveItem), with the messages of
// k8s.io/apimachinery/pkg/api/validate: a PodGroup's policy kind, workload reference and
// placement fields are fixed, its gang.minCount may change (workload scaling); a
// Workload's templates may not be added or removed, and within each only gang.minCount may
// change.
func validateSchedulingUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	errs, ok := validateScheduling(obj)
	if !ok {
		return nil, false
	}
	switch o := obj.(type) {
	case *schedulingv1beta1.Workload:
		ow := old.(*schedulingv1beta1.Workload)
		errs = append(errs, metaUpdate(&o.ObjectMeta, &ow.ObjectMeta)...)
		p := field.NewPath("spec")
		errs = append(errs, immutable(p.Child("controllerRef"), o.Spec.ControllerRef, ow.Spec.ControllerRef)...)
		errs = append(errs, templatesUpdate(o.Spec.PodGroupTemplates, ow.Spec.PodGroupTemplates, p.Child("podGroupTemplates"))...)
		if (len(o.Spec.CompositePodGroupTemplates) > 0 || len(ow.Spec.CompositePodGroupTemplates) > 0) &&
			!apiequality.Semantic.DeepEqual(o.Spec.CompositePodGroupTemplates, ow.Spec.CompositePodGroupTemplates) {
			errs = append(errs, field.Invalid(p.Child("compositePodGroupTemplates"), nil, "field is immutable"))
		}
	case *schedulingv1beta1.PodGroup:
		op := old.(*schedulingv1beta1.PodGroup)
		errs = append(errs, metaUpdate(&o.ObjectMeta, &op.ObjectMeta)...)
		p := field.NewPath("spec")
		n, w := &o.Spec, &op.Spec
		errs = append(errs, policyUpdate(&n.SchedulingPolicy, &w.SchedulingPolicy, p.Child("schedulingPolicy"))...)
		errs = append(errs, immutable(p.Child("workloadRef"), n.WorkloadRef, w.WorkloadRef)...)
		errs = append(errs, immutable(p.Child("parentCompositePodGroupName"), n.ParentCompositePodGroupName, w.ParentCompositePodGroupName)...)
		errs = append(errs, immutable(p.Child("schedulingConstraints"), n.SchedulingConstraints, w.SchedulingConstraints)...)
		errs = append(errs, immutable(p.Child("resourceClaims"), n.ResourceClaims, w.ResourceClaims)...)
		errs = append(errs, immutable(p.Child("disruptionMode"), n.DisruptionMode, w.DisruptionMode)...)
		errs = append(errs, immutable(p.Child("priorityClassName"), n.PriorityClassName, w.PriorityClassName)...)
		errs = append(errs, immutable(p.Child("priority"), n.Priority, w.Priority)...)
		errs = append(errs, immutable(p.Child("preemptionPolicy"), n.PreemptionPolicy, w.PreemptionPolicy)...)
	}
	return errs, true
}

// immutable is +k8s:immutable: any change of the value is refused.
func immutable[T any](p *field.Path, value, old T) field.ErrorList {
	if apiequality.Semantic.DeepEqual(value, old) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, nil, "field is immutable")}
}

// policyUpdate: basic is immutable; gang may be neither set nor cleared, but its minCount
// may change.
func policyUpdate(n, o *schedulingv1beta1.PodGroupSchedulingPolicy, p *field.Path) field.ErrorList {
	errs := immutable(p.Child("basic"), n.Basic, o.Basic)
	switch {
	case o.Gang == nil && n.Gang != nil:
		errs = append(errs, field.Invalid(p.Child("gang"), nil, "field cannot be set once created"))
	case o.Gang != nil && n.Gang == nil:
		errs = append(errs, field.Invalid(p.Child("gang"), nil, "field cannot be cleared once set"))
	}
	return errs
}

// templatesUpdate: templates are matched by name (a renamed one is removed and another
// added); none may be added or removed, and each keeps all but its gang.minCount.
func templatesUpdate(n, o []schedulingv1beta1.PodGroupTemplate, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	old := map[string]*schedulingv1beta1.PodGroupTemplate{}
	for i := range o {
		old[o[i].Name] = &o[i]
	}
	kept := 0
	for i := range n {
		t := &n[i]
		ot, ok := old[t.Name]
		if !ok {
			errs = append(errs, field.Forbidden(p.Index(i), "item may not be added"))
			continue
		}
		kept++
		ip := p.Index(i)
		errs = append(errs, policyUpdate(&t.SchedulingPolicy, &ot.SchedulingPolicy, ip.Child("schedulingPolicy"))...)
		errs = append(errs, immutable(ip.Child("schedulingConstraints"), t.SchedulingConstraints, ot.SchedulingConstraints)...)
		errs = append(errs, immutable(ip.Child("resourceClaims"), t.ResourceClaims, ot.ResourceClaims)...)
		errs = append(errs, immutable(ip.Child("disruptionMode"), t.DisruptionMode, ot.DisruptionMode)...)
		errs = append(errs, immutable(ip.Child("priorityClassName"), t.PriorityClassName, ot.PriorityClassName)...)
		errs = append(errs, immutable(ip.Child("priority"), t.Priority, ot.Priority)...)
		errs = append(errs, immutable(ip.Child("preemptionPolicy"), t.PreemptionPolicy, ot.PreemptionPolicy)...)
	}
	if kept < len(o) {
		errs = append(errs, field.Forbidden(p, "item may not be removed"))
	}
	return errs
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

// validatePodSchedulingGroup is a pod's spec.schedulingGroup: a union of one member,
// podGroupName, a DNS subdomain (the PodGroup need not exist yet). The field is immutable
// after creation: validatePodUpdate refuses a change with upstream's "pod updates may not
// change fields other than ..." (upstream's scheduler assumes it never changes).
func validatePodSchedulingGroup(g *corev1.PodSchedulingGroup, p *field.Path) field.ErrorList {
	if g == nil {
		return nil
	}
	if g.PodGroupName == nil {
		return field.ErrorList{field.Invalid(p, "{}", "must specify one of: `podGroupName`")}
	}
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(*g.PodGroupName) {
		errs = append(errs, field.Invalid(p.Child("podGroupName"), *g.PodGroupName, msg))
	}
	return errs
}
