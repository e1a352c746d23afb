package apiserver

import (
	"context"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
)

// ---- selfsubjectreviews (kubectl auth whoami) ----

func (s *Server) serveSelfSubjectReview(rq *handlers.Request) error {
	res := s.reg[authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews")]
	obj, err := s.decodeAs(rq, res)
	if err != nil {
		return err
	}
	r := obj.(*authenticationv1.SelfSubjectReview)
	r.CreationTimestamp = metav1.Now()
	r.Status.UserInfo = authenticationv1.UserInfo{Username: rq.User.Name, Groups: rq.User.Groups}
	handlers.WriteJSON(rq.W, http.StatusCreated, r, rq.Format)
	return nil
}

// ---- selfsubjectaccessreviews (kubectl auth can-i) ----

func (s *Server) serveSelfSubjectAccessReview(rq *handlers.Request) error {
	res := s.reg[authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews")]
	obj, err := s.decodeAs(rq, res)
	if err != nil {
		return err
	}
	r := obj.(*authorizationv1.SelfSubjectAccessReview)
	if errs := validateAccessReviewSpec(r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes); len(errs) > 0 {
		return apierrors.NewInvalid(res.GVK().GroupKind(), "", errs)
	}
	r.CreationTimestamp = metav1.Now()
	r.Status = s.accessReview(rq.Req.Context(), rq.User, r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
	handlers.WriteJSON(rq.W, http.StatusCreated, r, rq.Format)
	return nil
}

// validateAccessReviewSpec requires exactly one of the two attribute sets, as upstream.
func validateAccessReviewSpec(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	switch {
	case ra == nil && nra == nil:
		errs = append(errs, field.Required(p.Child("resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	case ra != nil && nra != nil:
		errs = append(errs, field.Invalid(p.Child("nonResourceAttributes"), nra, "cannot be specified in combination with resourceAttributes"))
	}
	return errs
}

// accessReview answers "may u do this?" with the authorizer chain real requests get.
// Like upstream's it is the authorizers' answer: what admission would refuse on top
// (NodeRestriction: a kubelet's own Node only) is not reflected.
func (s *Server) accessReview(ctx context.Context, u admission.UserInfo, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a := &authz.Attributes{User: u}
	if ra != nil {
		a.ResourceRequest = true
		a.Verb, a.Group, a.Resource, a.Subresource, a.Namespace, a.Name = ra.Verb, ra.Group, ra.Resource, ra.Subresource, ra.Namespace, ra.Name
		if ra.FieldSelector != nil {
			a.FieldSelector = ra.FieldSelector.RawSelector
		}
	} else {
		a.Verb, a.Path = nra.Verb, nra.Path
	}
	ok, why := s.authorizeAttrs(ctx, a)
	if ok {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true}
	}
	return authorizationv1.SubjectAccessReviewStatus{Allowed: false, Reason: why}
}

// ---- subjectaccessreviews and localsubjectaccessreviews (asking about someone else) ----

func (s *Server) serveSubjectAccessReview(rq *handlers.Request) error {
	res := s.reg[authorizationv1.SchemeGroupVersion.WithResource("subjectaccessreviews")]
	obj, err := s.decodeAs(rq, res)
	if err != nil {
		return err
	}
	r := obj.(*authorizationv1.SubjectAccessReview)
	errs := validateAccessReviewSpec(r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
	errs = append(errs, validateSubject(r.Spec)...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(res.GVK().GroupKind(), "", errs)
	}
	r.CreationTimestamp = metav1.Now()
	r.Status = s.accessReview(rq.Req.Context(), reviewedUser(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
	handlers.WriteJSON(rq.W, http.StatusCreated, r, rq.Format)
	return nil
}

func (s *Server) serveLocalSubjectAccessReview(rq *handlers.Request) error {
	res := s.reg[authorizationv1.SchemeGroupVersion.WithResource("localsubjectaccessreviews")]
	obj, err := s.decodeAs(rq, res)
	if err != nil {
		return err
	}
	r := obj.(*authorizationv1.LocalSubjectAccessReview)
	errs := validateSubject(r.Spec)
	p := field.NewPath("spec")
	switch {
	case r.Spec.ResourceAttributes == nil:
		errs = append(errs, field.Required(p.Child("resourceAttributes"), "resourceAttributes are required for a local review"))
	case r.Spec.NonResourceAttributes != nil:
		errs = append(errs, field.Invalid(p.Child("nonResourceAttributes"), r.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	case r.Spec.ResourceAttributes.Namespace == "":
		r.Spec.ResourceAttributes.Namespace = rq.Info.Namespace
	case r.Spec.ResourceAttributes.Namespace != rq.Info.Namespace:
		errs = append(errs, field.Invalid(p.Child("resourceAttributes", "namespace"), r.Spec.ResourceAttributes.Namespace,
			"must match the namespace of the request ("+rq.Info.Namespace+")"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(res.GVK().GroupKind(), "", errs)
	}
	r.Namespace = rq.Info.Namespace
	r.CreationTimestamp = metav1.Now()
	r.Status = s.accessReview(rq.Req.Context(), reviewedUser(r.Spec), r.Spec.ResourceAttributes, nil)
	handlers.WriteJSON(rq.W, http.StatusCreated, r, rq.Format)
	return nil
}

func validateSubject(spec authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	if spec.User == "" && len(spec.Groups) == 0 {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "user"), spec.User, "at least one of user or group must be specified")}
	}
	return nil
}

func reviewedUser(spec authorizationv1.SubjectAccessReviewSpec) admission.UserInfo {
	return admission.UserInfo{Name: spec.User, Groups: spec.Groups}
}

// ---- selfsubjectrulesreviews (kubectl auth can-i --list) ----

func (s *Server) serveSelfSubjectRulesReview(rq *handlers.Request) error {
	res := s.reg[authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews")]
	obj, err := s.decodeAs(rq, res)
	if err != nil {
		return err
	}
	r := obj.(*authorizationv1.SelfSubjectRulesReview)
	if r.Spec.Namespace == "" {
		return apierrors.NewInvalid(res.GVK().GroupKind(), "", field.ErrorList{field.Required(field.NewPath("spec", "namespace"), "")})
	}
	r.CreationTimestamp = metav1.Now()
	st, err := s.rulesReview(rq.Req.Context(), rq.User, r.Spec.Namespace)
	if err != nil {
		return err
	}
	r.Status = st
	handlers.WriteJSON(rq.W, http.StatusCreated, r, rq.Format)
	return nil
}

// rulesReview lists the rules that apply to u in namespace, as upstream: system:masters
// may do everything; RBAC's rules from the bindings; a node's fixed rules. Rules the node
// authorizer grants per object (its pods' secrets and config maps) are not enumerable, so
// for nodes the answer is marked incomplete, as upstream's.
func (s *Server) rulesReview(ctx context.Context, u admission.UserInfo, namespace string) (authorizationv1.SubjectRulesReviewStatus, error) {
	var st authorizationv1.SubjectRulesReviewStatus
	rules, incomplete, err := s.authz.Rules(ctx, u, namespace)
	st.Incomplete = incomplete
	if err != nil {
		return st, apierrors.NewServiceUnavailable(err.Error())
	}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{
			Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
		})
	}
	return st, nil
}
