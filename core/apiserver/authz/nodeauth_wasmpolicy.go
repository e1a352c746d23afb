package authz

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// The node authorizer's second kind of edge, beside pod -> Secret: a kubelet loads the
// WasmPolicies of the kubelet hooks whose spec.kubelet.nodeSelector matches its Node's
// labels (plugins/wasmpolicy, Placement), and pulls their modules with the docker configs
// of spec.module.imagePullSecrets. So a node may get a Secret that such a policy names
// when the policy selects it, and nothing more: a policy of another hook, a node the
// selector does not match (or whose Node does not exist yet, as the loader then selects
// nothing), and a Secret the policy does not name are refused. Upstream's graph has the
// same shape for pod -> Secret, with the pod's spec.nodeName as the edge to the node.
//
// The policies and Nodes come from watch-fed caches; a request they refuse is checked once
// more against storage, so a policy created a moment ago does not cause a spurious 403.

// policyEdges is what the WasmPolicy edges are decided from.
type policyEdges struct {
	nodes, policies *registry.Cache
	nodeStore       *registry.Store
	policyStore     *registry.Store
}

func newPolicyEdges(ctx context.Context, nodes, policies *registry.Store) *policyEdges {
	return &policyEdges{nodes: registry.NewCache(ctx, nodes, nil), policies: registry.NewCache(ctx, policies, nil),
		nodeStore: nodes, policyStore: policies}
}

func (e *policyEdges) wait(ctx context.Context) error {
	for _, c := range []*registry.Cache{e.nodes, e.policies} {
		select {
		case <-c.Synced():
		case <-ctx.Done():
			return fmt.Errorf("node authorizer: WasmPolicies and Nodes not synced: %w", ctx.Err())
		}
	}
	return nil
}

// pullSecret reports whether node may get Secret ns/name because a kubelet policy that
// selects it names the Secret, from the caches and, when they say no, from storage. The
// reason, when refused, names a policy that names the Secret but does not select the node
// ("" when none names it).
func (e *policyEdges) pullSecret(ctx context.Context, node, ns, name string) (bool, string) {
	if err := e.wait(ctx); err != nil {
		return false, err.Error()
	}
	var nodeLabels map[string]string
	if o, ok := e.nodes.Get("", node); ok {
		nodeLabels = nodeLabelsOf(o)
	}
	ok, reason := pullSecretGrant(policiesOf(e.policies.Objects("")), node, nodeLabels, ns, name)
	if ok {
		return true, ""
	}
	// The caches may lag a write that just returned.
	if o, err := e.nodeStore.Storage.Get(ctx, e.nodeStore.Key("", node)); err == nil {
		nodeLabels = nodeLabelsOf(o)
	}
	list, err := e.policyStore.Storage.List(ctx, e.policyStore.Prefix(""), storage.ListOptions{})
	if err != nil {
		return false, reason
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return false, reason
	}
	return pullSecretGrant(policiesOf(objs), node, nodeLabels, ns, name)
}

// nodeLabelsOf is a Node's labels, never nil for a Node (an empty set still matches an
// empty selector).
func nodeLabelsOf(o runtime.Object) map[string]string {
	n, ok := o.(*corev1.Node)
	if !ok {
		return nil
	}
	if n.Labels == nil {
		return map[string]string{}
	}
	return n.Labels
}

func policiesOf(objs []runtime.Object) []*policyv1alpha1.WasmPolicy {
	out := make([]*policyv1alpha1.WasmPolicy, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*policyv1alpha1.WasmPolicy); ok {
			out = append(out, p)
		}
	}
	return out
}

// pullSecretGrant decides the WasmPolicy edge: node (with nodeLabels; nil when it has no
// Node object) may get Secret ns/name when a policy of a kubelet hook names it in
// spec.module.imagePullSecrets and its spec.kubelet.nodeSelector (none: every node)
// matches the node's labels. When refused, reason names the first policy that names the
// Secret without selecting the node, or is "" when no kubelet policy names it. A pure
// function: the authorizer's tests call it with the objects themselves.
func pullSecretGrant(policies []*policyv1alpha1.WasmPolicy, node string, nodeLabels map[string]string, ns, name string) (ok bool, reason string) {
	for _, p := range policies {
		if p.Spec.Hook.ComponentOf() != policyv1alpha1.ComponentKubelet || !namesSecret(p, ns, name) {
			continue
		}
		if nodeLabels == nil {
			if reason == "" {
				reason = fmt.Sprintf("WasmPolicy %q names this Secret in spec.module.imagePullSecrets, but node %q has no Node object whose labels its spec.kubelet.nodeSelector could match", p.Name, node)
			}
			continue
		}
		sel := labels.Everything()
		if k := p.Spec.Kubelet; k != nil && k.NodeSelector != nil {
			s, err := metav1.LabelSelectorAsSelector(k.NodeSelector)
			if err != nil {
				continue // validation refuses it; the loader loads it nowhere
			}
			sel = s
		}
		if sel.Matches(labels.Set(nodeLabels)) {
			return true, ""
		}
		if reason == "" {
			reason = fmt.Sprintf("WasmPolicy %q names this Secret in spec.module.imagePullSecrets, but its spec.kubelet.nodeSelector (%s) does not select node %q", p.Name, sel, node)
		}
	}
	return false, reason
}

func namesSecret(p *policyv1alpha1.WasmPolicy, ns, name string) bool {
	for _, s := range p.Spec.Module.ImagePullSecrets {
		if s.Namespace == ns && s.Name == name {
			return true
		}
	}
	return false
}
