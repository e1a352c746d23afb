package defaults

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// rbac sets upstream's RBAC defaults (pkg/apis/rbac/v1/defaults.go): a binding's
// roleRef.apiGroup and a User or Group subject's apiGroup are rbac.authorization.k8s.io
// when unset. It reports whether obj is an RBAC binding.
func rbac(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *rbacv1.RoleBinding:
		roleRef(&o.RoleRef)
		subjects(o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		roleRef(&o.RoleRef)
		subjects(o.Subjects)
	default:
		return false
	}
	return true
}

func roleRef(r *rbacv1.RoleRef) {
	if r.APIGroup == "" {
		r.APIGroup = rbacv1.GroupName
	}
}

func subjects(ss []rbacv1.Subject) {
	for i := range ss {
		if ss[i].APIGroup == "" && (ss[i].Kind == rbacv1.UserKind || ss[i].Kind == rbacv1.GroupKind) {
			ss[i].APIGroup = rbacv1.GroupName
		}
	}
}
