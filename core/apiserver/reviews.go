package apiserver

import (
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// ---- selfsubjectreviews (kubectl auth whoami) ----

func (s *Server) serveSelfSubjectReview(rq *request) error {
	res := s.reg[authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews")]
	obj, err := s.decodeAs(rq, res)
	if err != nil {
		return err
	}
	r := obj.(*authenticationv1.SelfSubjectReview)
	r.CreationTimestamp = metav1.Now()
	r.Status.UserInfo = authenticationv1.UserInfo{Username: rq.user.Name, Groups: rq.user.Groups}
	writeJSON(rq.w, http.StatusCreated, r, rq.format)
	return nil
}

// ---- selfsubjectaccessreviews (kubectl auth can-i) ----

func (s *Server) serveSelfSubjectAccessReview(rq *request) error {
	res := s.reg[authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews")]
	obj, err := s.decodeAs(rq, res)
	if err != nil {
		return err
	}
	r := obj.(*authorizationv1.SelfSubjectAccessReview)
	if errs := validateAccessReviewSpec(r.Spec); len(errs) > 0 {
		return apierrors.NewInvalid(res.gvk().GroupKind(), "", errs)
	}
	r.CreationTimestamp = metav1.Now()
	r.Status = accessReview(rq.user, r.Spec, s.reg)
	writeJSON(rq.w, http.StatusCreated, r, rq.format)
	return nil
}

// validateAccessReviewSpec requires exactly one of the two attribute sets, as upstream.
func validateAccessReviewSpec(spec authorizationv1.SelfSubjectAccessReviewSpec) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	switch {
	case spec.ResourceAttributes == nil && spec.NonResourceAttributes == nil:
		errs = append(errs, field.Required(p.Child("resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	case spec.ResourceAttributes != nil && spec.NonResourceAttributes != nil:
		errs = append(errs, field.Invalid(p.Child("nonResourceAttributes"), spec.NonResourceAttributes, "cannot be specified in combination with resourceAttributes"))
	}
	return errs
}

// accessReview answers "may u do this?" with the same authorize decision real requests
// get. Like upstream's authorizers it is coarse: object-level limits on kubelets (their own
// Node, pods bound to them) are admission's and not reflected here.
func accessReview(u admission.UserInfo, spec authorizationv1.SelfSubjectAccessReviewSpec, reg registry) authorizationv1.SubjectAccessReviewStatus {
	ri := &requestInfo{}
	if a := spec.ResourceAttributes; a != nil {
		ri.resourceRequest = true
		ri.verb, ri.namespace, ri.name, ri.subresource = a.Verb, a.Namespace, a.Name, a.Subresource
		ri.res = servedOrNamed(reg, a.Group, a.Version, a.Resource)
	} else {
		ri.verb = spec.NonResourceAttributes.Verb
	}
	ok, why := authorize(u, ri)
	if ok {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "allowed by wasmkube"}
	}
	return authorizationv1.SubjectAccessReviewStatus{Allowed: false, Reason: why}
}

// servedOrNamed finds the served resource group/resource names (any version when version
// is empty or "*"); a resource wasmkube does not serve is still named, so the answer for
// it follows the same rules.
func servedOrNamed(reg registry, group, version, plural string) *resource {
	for gvr, r := range reg {
		if gvr.Group == group && gvr.Resource == plural && (version == "" || version == "*" || gvr.Version == version) {
			return r
		}
	}
	return &resource{gvr: schema.GroupVersionResource{Group: group, Version: version, Resource: plural}}
}

// ---- selfsubjectrulesreviews (kubectl auth can-i --list) ----

func (s *Server) serveSelfSubjectRulesReview(rq *request) error {
	res := s.reg[authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews")]
	obj, err := s.decodeAs(rq, res)
	if err != nil {
		return err
	}
	r := obj.(*authorizationv1.SelfSubjectRulesReview)
	if r.Spec.Namespace == "" {
		return apierrors.NewInvalid(res.gvk().GroupKind(), "", field.ErrorList{field.Required(field.NewPath("spec", "namespace"), "")})
	}
	r.CreationTimestamp = metav1.Now()
	r.Status = rulesReview(rq.user, r.Spec.Namespace)
	writeJSON(rq.w, http.StatusCreated, r, rq.format)
	return nil
}

// rulesReview lists what u may do in namespace. The rules are derived by asking authorize
// about every served resource, subresource and verb, so they cannot drift from the
// decisions real requests get.
func rulesReview(u admission.UserInfo, namespace string) authorizationv1.SubjectRulesReviewStatus {
	if ok, _ := authorize(u, &requestInfo{resourceRequest: true, verb: "*", res: &resource{gvr: schema.GroupVersionResource{Resource: "*"}}}); ok {
		return authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		}
	}
	var st authorizationv1.SubjectRulesReviewStatus
	for _, res := range resources {
		verbs := []string(res.verbs())
		for _, sub := range append([]string{""}, res.subresources...) {
			subVerbs := verbs
			if sub != "" {
				subVerbs = subresourceDiscovery[sub].verbs
			}
			var allowed []string
			for _, v := range subVerbs {
				if ok, _ := authorize(u, &requestInfo{resourceRequest: true, verb: v, res: res, namespace: namespace, subresource: sub}); ok {
					allowed = append(allowed, v)
				}
			}
			if len(allowed) > 0 {
				st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{
					Verbs: allowed, APIGroups: []string{res.gvr.Group}, Resources: []string{subName(res.gvr.Resource, sub)},
				})
			}
		}
	}
	if ok, _ := authorize(u, &requestInfo{verb: "get"}); ok {
		st.NonResourceRules = []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}}
	}
	return st
}
