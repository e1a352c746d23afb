package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RBAC objects, as upstream's pkg/apis/rbac/validation. Role and binding names are path
// segments, not DNS names (system:kube-scheduler, system:node).

var rbacName = apimachineryvalidation.ValidateNameFunc(path.ValidatePathSegmentName)

// validateRBAC dispatches the four RBAC kinds; ok is false for other objects.
func validateRBAC(obj runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *rbacv1.Role:
		return append(objectMeta(&o.ObjectMeta, true, rbacName), validateRules(o.Rules, true)...), true
	case *rbacv1.ClusterRole:
		errs := append(objectMeta(&o.ObjectMeta, false, rbacName), validateRules(o.Rules, false)...)
		if ar := o.AggregationRule; ar != nil {
			p := field.NewPath("aggregationRule", "clusterRoleSelectors")
			if len(ar.ClusterRoleSelectors) == 0 {
				errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
			}
			for i := range ar.ClusterRoleSelectors {
				errs = append(errs, metav1validation.ValidateLabelSelector(&ar.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
			}
		}
		return errs, true
	case *rbacv1.RoleBinding:
		errs := objectMeta(&o.ObjectMeta, true, rbacName)
		errs = append(errs, validateRoleRef(o.RoleRef, []string{"Role", "ClusterRole"})...)
		return append(errs, validateSubjects(o.Subjects, true)...), true
	case *rbacv1.ClusterRoleBinding:
		errs := objectMeta(&o.ObjectMeta, false, rbacName)
		errs = append(errs, validateRoleRef(o.RoleRef, []string{"ClusterRole"})...)
		return append(errs, validateSubjects(o.Subjects, false)...), true
	}
	return nil, false
}

// validateRBACUpdate: the create rules, metadata changes, and a binding's roleRef is
// immutable (delete and recreate the binding to point it at another role).
func validateRBACUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	errs, ok := validateRBAC(obj)
	if !ok {
		return nil, false
	}
	refErr := func(now, was rbacv1.RoleRef) {
		if now != was {
			errs = append(errs, field.Invalid(field.NewPath("roleRef"), now, "cannot change roleRef"))
		}
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		errs = append(errs, metaUpdate(&o.ObjectMeta, &old.(*rbacv1.Role).ObjectMeta)...)
	case *rbacv1.ClusterRole:
		errs = append(errs, metaUpdate(&o.ObjectMeta, &old.(*rbacv1.ClusterRole).ObjectMeta)...)
	case *rbacv1.RoleBinding:
		errs = append(errs, metaUpdate(&o.ObjectMeta, &old.(*rbacv1.RoleBinding).ObjectMeta)...)
		refErr(o.RoleRef, old.(*rbacv1.RoleBinding).RoleRef)
	case *rbacv1.ClusterRoleBinding:
		errs = append(errs, metaUpdate(&o.ObjectMeta, &old.(*rbacv1.ClusterRoleBinding).ObjectMeta)...)
		refErr(o.RoleRef, old.(*rbacv1.ClusterRoleBinding).RoleRef)
	}
	return errs, true
}

func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		p := field.NewPath("rules").Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	okKind := false
	for _, k := range kinds {
		okKind = okKind || ref.Kind == k
	}
	if !okKind {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range path.ValidatePathSegmentName(ref.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

func validateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, s := range subjects {
		p := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Name != "" {
				for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(s.Name, false) {
					errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
				}
			}
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}
