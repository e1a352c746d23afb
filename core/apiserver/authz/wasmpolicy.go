package authz

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// CapabilityGrant is one permission a WasmPolicy capability needs its writer to hold,
// cluster-wide.
type CapabilityGrant struct {
	Group, Resource, Subresource string
	Verbs                        []string
}

// KubeletCapabilityGrants are what the kubelet capabilities need: pod-network lets a
// module reach its pod's IP, which through the API is the pods/proxy subresource.
var KubeletCapabilityGrants = map[string]CapabilityGrant{
	"pod-network": {Resource: "pods", Subresource: "proxy", Verbs: []string{"get"}},
}

// PolicyCapabilities is a validating admission plugin for WasmPolicies, in the spirit of
// RBAC's escalation check: a policy's capabilities (spec.admission.capabilities, the
// resources its module may read through get_object and list_objects; and
// spec.kubelet.capabilities) are granted only by a writer who holds them: get and list on
// each resource in every namespace (KubeletCapabilityGrants for the kubelet's), or the
// escalate verb on the policy, or system:masters. The check runs on a create and on every
// change of the spec, not only of the capabilities: the module is what uses them, so a
// new module (or new settings) is a new grant.
type PolicyCapabilities struct {
	z *Authorizer
	// resolve finds a served resource's group by its plural name, as the admission
	// policies' reader does.
	resolve func(resource string) (schema.GroupVersionResource, bool)
}

// PolicyCapabilities is the plugin, with resolve naming served resources.
func (z *Authorizer) PolicyCapabilities(resolve func(resource string) (schema.GroupVersionResource, bool)) PolicyCapabilities {
	return PolicyCapabilities{z: z, resolve: resolve}
}

// Validate implements admission.ValidationInterface.
func (p PolicyCapabilities) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Group != policyv1alpha1.GroupName || a.Resource.Resource != "wasmpolicies" || a.Subresource != "" {
		return nil
	}
	if a.Operation != admission.Create && a.Operation != admission.Update {
		return nil
	}
	pol, ok := a.Object.(*policyv1alpha1.WasmPolicy)
	if !ok || a.User.InGroup(MastersGroup) {
		return nil
	}
	if old, ok := a.OldObject.(*policyv1alpha1.WasmPolicy); ok && equality.Semantic.DeepEqual(old.Spec, pol.Spec) {
		return nil
	}
	var needs []need
	if ad := pol.Spec.Admission; ad != nil {
		for i, c := range ad.Capabilities {
			f := field.NewPath("spec", "admission", "capabilities").Index(i)
			gvr, ok := p.resolve(c)
			if !ok {
				continue // validation names a resource that is not served
			}
			needs = append(needs, need{field: f, capability: c, grant: CapabilityGrant{Group: gvr.Group, Resource: gvr.Resource, Verbs: []string{"get", "list"}}})
		}
	}
	if k := pol.Spec.Kubelet; k != nil {
		for i, c := range k.Capabilities {
			if g, ok := KubeletCapabilityGrants[c]; ok {
				needs = append(needs, need{field: field.NewPath("spec", "kubelet", "capabilities").Index(i), capability: c, grant: g})
			}
		}
	}
	if len(needs) == 0 {
		return nil
	}
	esc := &Attributes{User: a.User, Verb: "escalate", ResourceRequest: true, Group: policyv1alpha1.GroupName, Resource: "wasmpolicies", Name: pol.Name}
	if ok, _ := p.z.Authorize(ctx, esc); ok {
		return nil
	}
	for _, n := range needs {
		for _, verb := range n.grant.Verbs {
			at := &Attributes{User: a.User, Verb: verb, ResourceRequest: true, Group: n.grant.Group, Resource: n.grant.Resource, Subresource: n.grant.Subresource}
			if ok, _ := p.z.Authorize(ctx, at); !ok {
				return admission.Forbidden(a, fmt.Sprintf("%s: capability %q: user %q may not %s %s in all namespaces, so may not grant it to a policy (a policy may read only what its author may; or hold escalate on wasmpolicies)",
					n.field, n.capability, a.User.Name, verbsOf(n.grant), resourceOf(n.grant)))
			}
		}
	}
	return nil
}

type need struct {
	field      *field.Path
	capability string
	grant      CapabilityGrant
}

func verbsOf(g CapabilityGrant) string {
	if len(g.Verbs) == 2 {
		return g.Verbs[0] + " and " + g.Verbs[1]
	}
	return g.Verbs[0]
}

func resourceOf(g CapabilityGrant) string {
	r := g.Resource
	if g.Subresource != "" {
		r += "/" + g.Subresource
	}
	if g.Group != "" {
		r += "." + g.Group
	}
	return r
}
