package validation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateNode(node *corev1.Node) field.ErrorList {
	allErrs := objectMeta(&node.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	allErrs = append(allErrs, validateNodeSpec(&node.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateNodeStatus(&node.Status, field.NewPath("status"))...)
	return allErrs
}

func validateNodeSpec(spec *corev1.NodeSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.PodCIDR != "" {
		allErrs = append(allErrs, utilvalidation.IsValidCIDR(fldPath.Child("podCIDR"), spec.PodCIDR)...)
	}
	if len(spec.PodCIDRs) > 0 {
		p := fldPath.Child("podCIDRs")
		for i, cidr := range spec.PodCIDRs {
			allErrs = append(allErrs, utilvalidation.IsValidCIDR(p.Index(i), cidr)...)
		}
		if spec.PodCIDR != "" && spec.PodCIDRs[0] != spec.PodCIDR {
			allErrs = append(allErrs, field.Invalid(p, spec.PodCIDRs, "the first entry must match podCIDR"))
		}
		if len(spec.PodCIDRs) > 2 {
			allErrs = append(allErrs, field.Invalid(p, spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
		}
	}
	allErrs = append(allErrs, validateTaints(spec.Taints, fldPath.Child("taints"))...)
	return allErrs
}

func validateTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, t := range taints {
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		if t.Value != "" {
			for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("value"), t.Value, msg))
			}
		}
		switch {
		case t.Effect == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("effect"), ""))
		case !slices.Contains(supportedTaintEffects, string(t.Effect)):
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("effect"), t.Effect, supportedTaintEffects))
		}
		key := t.Key + "\x00" + string(t.Effect)
		if seen.Has(key) {
			allErrs = append(allErrs, field.Duplicate(idxPath, fmt.Sprintf("taint with key %q and effect %q", t.Key, t.Effect)))
		}
		seen.Insert(key)
	}
	return allErrs
}

func validateNodeStatus(st *corev1.NodeStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for name, q := range st.Capacity {
		if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("capacity").Key(string(name)), q.String(), isNegativeErrorMsg))
		}
	}
	for name, q := range st.Allocatable {
		if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("allocatable").Key(string(name)), q.String(), isNegativeErrorMsg))
		}
	}
	for i, a := range st.Addresses {
		if a.Type == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("addresses").Index(i).Child("type"), ""))
		}
	}
	return allErrs
}

// validateNodeUpdate: podCIDR(s) may be set once and never changed, as upstream.
func validateNodeUpdate(node, old *corev1.Node) field.ErrorList {
	allErrs := metaUpdate(&node.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateNodeSpec(&node.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateNodeStatus(&node.Status, field.NewPath("status"))...)
	if old.Spec.PodCIDR != "" && node.Spec.PodCIDR != old.Spec.PodCIDR {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "podCIDR"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if len(old.Spec.PodCIDRs) > 0 {
		same := len(old.Spec.PodCIDRs) == len(node.Spec.PodCIDRs)
		for i := 0; same && i < len(old.Spec.PodCIDRs); i++ {
			same = old.Spec.PodCIDRs[i] == node.Spec.PodCIDRs[i]
		}
		if !same {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
		}
	}
	if old.Spec.ProviderID != "" && node.Spec.ProviderID != old.Spec.ProviderID {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return allErrs
}

func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	allErrs := objectMeta(&ns.ObjectMeta, false, apimachineryvalidation.ValidateNamespaceName)
	allErrs = append(allErrs, validateFinalizerNames(ns.Spec.Finalizers, field.NewPath("spec", "finalizers"))...)
	return allErrs
}

func validateFinalizerNames(finalizers []corev1.FinalizerName, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, f := range finalizers {
		allErrs = append(allErrs, apimachineryvalidation.ValidateFinalizerName(string(f), fldPath.Index(i))...)
	}
	return allErrs
}

func validateNamespaceUpdate(ns, old *corev1.Namespace) field.ErrorList {
	allErrs := metaUpdate(&ns.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateFinalizerNames(ns.Spec.Finalizers, field.NewPath("spec", "finalizers"))...)
	if ns.Status.Phase != "" && ns.Status.Phase != corev1.NamespaceActive && ns.Status.Phase != corev1.NamespaceTerminating {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("status", "phase"), ns.Status.Phase, []string{string(corev1.NamespaceActive), string(corev1.NamespaceTerminating)}))
	}
	return allErrs
}

// validateBinding checks a pods/binding request: it must name a node.
func validateBinding(b *corev1.Binding) field.ErrorList {
	var allErrs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("target", "name"), ""))
	}
	return allErrs
}
