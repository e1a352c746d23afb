package authz

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// The node authorizer, as upstream's plugin/pkg/auth/authorizer/node: a kubelet
// (user system:node:<name>, group system:nodes) may read a Secret, ConfigMap,
// PersistentVolumeClaim or ServiceAccount only when a pod bound to its node references
// it (or, for a Secret, when a kubelet WasmPolicy that selects the node names it in its
// imagePullSecrets: nodeauth_wasmpolicy.go), and may read pods only when they are bound to it (a list or watch of pods must ask
// for spec.nodeName=<name>, as upstream's AuthorizeNodeWithSelectors). Everything else a
// node may do is the fixed rule set nodeRules (upstream's system:node role); which object
// it may write (its own Node and Lease, its pods' status) is NodeRestriction admission's.
//
// What references what is kept in a graph built from a watch of every pod, so a decision
// is a map lookup. A request the graph refuses is checked once more against storage, so a
// pod bound a moment ago (whose event the graph has not seen yet) does not cause a
// spurious 403 for its kubelet.

// nodeRules are the permissions every node has (upstream bootstrappolicy.NodeRules, for
// what wasmkube serves). Also the rules of the system:node ClusterRole.
var nodeRules = []rbacv1.PolicyRule{
	// Needed to check API access (non-mutating creates).
	{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}},
	{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews", "localsubjectaccessreviews"}},
	// Services and endpoints for service env vars and proxying.
	{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"services", "endpoints"}},
	{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}},
	// Namespaces' labels, which the kubelet's wasm hook selectors match (kubelet/hooks.go);
	// upstream's kubelet reads none, wasmkube's does.
	{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}},
	// Its Node (NodeRestriction: only its own).
	{Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}, APIGroups: []string{""}, Resources: []string{"nodes"}},
	{Verbs: []string{"patch", "update"}, APIGroups: []string{""}, Resources: []string{"nodes/status"}},
	// Its pods (reads are limited by the graph, writes by NodeRestriction).
	{Verbs: []string{"create", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}},
	{Verbs: []string{"patch", "update"}, APIGroups: []string{""}, Resources: []string{"pods/status"}},
	{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/eviction"}},
	// Events about its pods and itself.
	{Verbs: []string{"create", "patch", "update"}, APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}},
	// Its Lease in kube-node-lease (NodeRestriction: only its own).
	{Verbs: []string{"create", "delete", "get", "patch", "update"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}},
	// The local-path provisioner in the kubelet (kubelet/localpath.go): it creates and
	// deletes the volumes of its node (NodeRestriction checks the node label), watches
	// them, and reads the claims' StorageClass. Upstream's kubelet provisions nothing
	// and only gets PVs; wasmkube's is also k3s's local-path provisioner.
	{Verbs: []string{"create", "delete", "get", "list", "watch", "update", "patch"}, APIGroups: []string{""}, Resources: []string{"persistentvolumes"}},
	{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}},
	// The kubelet's wasm policies (plugins/wasmpolicy): it reads the WasmPolicies and writes
	// its own reports on them (NodeRestriction: only reports of component kubelet named
	// for its node).
	{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"policy.wasmkube.io"}, Resources: []string{"wasmpolicies"}},
	{Verbs: []string{"create", "get", "update"}, APIGroups: []string{"policy.wasmkube.io"}, Resources: []string{"wasmpolicyreports"}},
	// Client certificate rotation, as upstream's kubelet.
	{Verbs: []string{"create", "get", "list", "watch"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}},
}

// refKind is a kind of object the graph tracks references to.
type refKind uint8

const (
	refSecret refKind = iota
	refConfigMap
	refPVC
	refServiceAccount
)

var refKindOf = map[string]refKind{
	"secrets": refSecret, "configmaps": refConfigMap, "persistentvolumeclaims": refPVC, "serviceaccounts": refServiceAccount,
}

type refKey struct {
	kind      refKind
	namespace string
	name      string
}

// podRefs lists what a pod references: what its kubelet must read to run it.
func podRefs(p *corev1.Pod) []refKey {
	var out []refKey
	add := func(k refKind, name string) {
		if name != "" {
			out = append(out, refKey{k, p.Namespace, name})
		}
	}
	add(refServiceAccount, p.Spec.ServiceAccountName)
	for _, s := range p.Spec.ImagePullSecrets {
		add(refSecret, s.Name)
	}
	env := func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add(refConfigMap, e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add(refSecret, e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add(refConfigMap, r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add(refSecret, r.Name)
			}
		}
	}
	for i := range p.Spec.InitContainers {
		env(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		env(&p.Spec.Containers[i])
	}
	for i := range p.Spec.EphemeralContainers {
		env((*corev1.Container)(&p.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	secretRef := func(r *corev1.LocalObjectReference) {
		if r != nil {
			add(refSecret, r.Name)
		}
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add(refConfigMap, v.ConfigMap.Name)
		case v.Secret != nil:
			add(refSecret, v.Secret.SecretName)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					add(refConfigMap, src.ConfigMap.Name)
				}
				if src.Secret != nil {
					add(refSecret, src.Secret.Name)
				}
			}
		case v.PersistentVolumeClaim != nil:
			add(refPVC, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			add(refPVC, p.Name+"-"+v.Name) // the claim the ephemeral volume controller makes
		case v.AzureFile != nil:
			add(refSecret, v.AzureFile.SecretName)
		case v.CephFS != nil:
			secretRef(v.CephFS.SecretRef)
		case v.Cinder != nil:
			secretRef(v.Cinder.SecretRef)
		case v.FlexVolume != nil:
			secretRef(v.FlexVolume.SecretRef)
		case v.ISCSI != nil:
			secretRef(v.ISCSI.SecretRef)
		case v.RBD != nil:
			secretRef(v.RBD.SecretRef)
		case v.ScaleIO != nil:
			secretRef(v.ScaleIO.SecretRef)
		case v.StorageOS != nil:
			secretRef(v.StorageOS.SecretRef)
		case v.CSI != nil:
			secretRef(v.CSI.NodePublishSecretRef)
		}
	}
	return out
}

// nodeGraph is which node each pod is bound to and what the pods of each node reference.
type nodeGraph struct {
	podStore *registry.Store
	// policies are the edges from kubelet WasmPolicies to their imagePullSecrets
	// (nodeauth_wasmpolicy.go).
	policies *policyEdges
	mu       sync.RWMutex
	podOf    map[string]podEntry       // pod key -> its node and references
	refs     map[refKey]map[string]int // object -> node -> how many of its pods reference it
	synced   chan struct{}
	once     sync.Once
}

type podEntry struct {
	node string
	refs []refKey
}

func newNodeGraph(ctx context.Context, pods, nodes, policies *registry.Store) *nodeGraph {
	g := &nodeGraph{podStore: pods, policies: newPolicyEdges(ctx, nodes, policies), synced: make(chan struct{})}
	go g.run(ctx)
	return g
}

func (g *nodeGraph) pods() *registry.Store {
	return g.podStore
}

func (g *nodeGraph) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := g.listAndWatch(ctx); err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (g *nodeGraph) listAndWatch(ctx context.Context) error {
	st := g.pods()
	list, err := st.Storage.List(ctx, st.Prefix(""), storage.ListOptions{})
	if err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.podOf = map[string]podEntry{}
	g.refs = map[refKey]map[string]int{}
	for _, it := range items {
		g.setLocked(it.(*corev1.Pod), false)
	}
	g.mu.Unlock()
	g.once.Do(func() { close(g.synced) })
	w, err := st.Storage.Watch(ctx, st.Prefix(""), storage.WatchOptions{ResourceVersion: lm.GetResourceVersion()})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
			continue
		}
		g.mu.Lock()
		g.setLocked(p, ev.Type == watch.Deleted)
		g.mu.Unlock()
	}
	return fmt.Errorf("pod watch ended")
}

func (g *nodeGraph) setLocked(p *corev1.Pod, deleted bool) {
	key := p.Namespace + "/" + p.Name
	if old, ok := g.podOf[key]; ok {
		for _, r := range old.refs {
			if m := g.refs[r]; m != nil {
				if m[old.node]--; m[old.node] <= 0 {
					delete(m, old.node)
				}
				if len(m) == 0 {
					delete(g.refs, r)
				}
			}
		}
		delete(g.podOf, key)
	}
	if deleted || p.Spec.NodeName == "" {
		return
	}
	e := podEntry{node: p.Spec.NodeName, refs: podRefs(p)}
	g.podOf[key] = e
	for _, r := range e.refs {
		m := g.refs[r]
		if m == nil {
			m = map[string]int{}
			g.refs[r] = m
		}
		m[e.node]++
	}
}

func (g *nodeGraph) wait(ctx context.Context) error {
	select {
	case <-g.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("node authorizer graph not synced: %w", ctx.Err())
	}
}

// references reports whether a pod bound to node references r, from the graph and, when
// the graph says no, from storage.
func (g *nodeGraph) references(ctx context.Context, node string, r refKey) bool {
	g.mu.RLock()
	n := g.refs[r][node]
	g.mu.RUnlock()
	if n > 0 {
		return true
	}
	st := g.pods()
	list, err := st.Storage.List(ctx, st.Prefix(r.namespace), storage.ListOptions{Predicate: func(o runtime.Object) bool {
		return o.(*corev1.Pod).Spec.NodeName == node
	}})
	if err != nil {
		return false
	}
	for _, p := range list.(*corev1.PodList).Items {
		for _, have := range podRefs(&p) {
			if have == r {
				return true
			}
		}
	}
	return false
}

// podBound reports whether pod ns/name is bound to node, or does not exist (so that a
// kubelet asking about a pod deleted meanwhile gets the 404 it expects).
func (g *nodeGraph) podBound(ctx context.Context, node, ns, name string) bool {
	g.mu.RLock()
	e, ok := g.podOf[ns+"/"+name]
	g.mu.RUnlock()
	if ok && e.node == node {
		return true
	}
	st := g.pods()
	obj, err := st.Storage.Get(ctx, st.Key(ns, name))
	if err != nil {
		return errors.Is(err, storage.ErrNotFound)
	}
	return obj.(*corev1.Pod).Spec.NodeName == node
}

// authorize decides for node users: allowed, or not with the reason. A refusal here is
// only "no opinion": RBAC is asked next, as upstream's authorizer chain Node,RBAC.
func (g *nodeGraph) authorize(ctx context.Context, node string, a *Attributes) (bool, string) {
	if !a.ResourceRequest {
		return false, ""
	}
	if a.Group == "" {
		if kind, ok := refKindOf[a.Resource]; ok {
			return g.authorizeRef(ctx, node, kind, a)
		}
		if a.Resource == "pods" && a.Subresource == "" && (a.Verb == "get" || a.Verb == "list" || a.Verb == "watch") {
			return g.authorizePodRead(ctx, node, a)
		}
	}
	for i := range nodeRules {
		if ruleAllows(a, &nodeRules[i]) {
			return true, ""
		}
	}
	return false, ""
}

func (g *nodeGraph) authorizeRef(ctx context.Context, node string, kind refKind, a *Attributes) (bool, string) {
	switch {
	case kind == refServiceAccount && a.Subresource == "token" && a.Verb == "create":
	case a.Subresource != "":
		return false, fmt.Sprintf("node %q may not %s %s", node, a.Verb, a.resName())
	case a.Verb == "get":
	case (a.Verb == "list" || a.Verb == "watch") && (kind == refSecret || kind == refConfigMap) && a.Name != "":
		// a single object by metadata.name field selector, as the kubelet's watch of it
	default:
		return false, fmt.Sprintf("node %q may only get individual %s", node, a.Resource)
	}
	if a.Name == "" || a.Namespace == "" {
		return false, fmt.Sprintf("node %q may only get individual %s", node, a.Resource)
	}
	if err := g.wait(ctx); err != nil {
		return false, err.Error()
	}
	if g.references(ctx, node, refKey{kind, a.Namespace, a.Name}) {
		return true, ""
	}
	if kind == refSecret {
		ok, why := g.policies.pullSecret(ctx, node, a.Namespace, a.Name)
		if ok {
			return true, ""
		}
		if why != "" {
			return false, fmt.Sprintf("no relationship found between node %q and this object: %s", node, why)
		}
	}
	return false, fmt.Sprintf("no relationship found between node %q and this object", node)
}

func (g *nodeGraph) authorizePodRead(ctx context.Context, node string, a *Attributes) (bool, string) {
	if a.Verb != "get" {
		sel, err := fields.ParseSelector(a.FieldSelector)
		if err == nil {
			if v, ok := sel.RequiresExactMatch("spec.nodeName"); ok && v == node {
				return true, ""
			}
		}
		return false, fmt.Sprintf("node %q may only %s pods with fieldSelector spec.nodeName=%s", node, a.Verb, node)
	}
	if a.Name == "" || a.Namespace == "" {
		return false, fmt.Sprintf("node %q may only get individual pods", node)
	}
	if err := g.wait(ctx); err != nil {
		return false, err.Error()
	}
	if g.podBound(ctx, node, a.Namespace, a.Name) {
		return true, ""
	}
	return false, fmt.Sprintf("no relationship found between node %q and this object", node)
}
