package admission

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// ErrNamespaceNotFound is returned by a NamespaceGetter for a missing namespace.
var ErrNamespaceNotFound = errors.New("namespace not found")

// NamespaceGetter reads a namespace; it returns an error wrapping ErrNamespaceNotFound
// when it does not exist.
type NamespaceGetter func(ctx context.Context, name string) (*corev1.Namespace, error)

// NamespaceLifecycle refuses to create objects in a namespace that does not exist or is
// terminating, as Kubernetes' plugin of the same name does.
type NamespaceLifecycle struct {
	Get NamespaceGetter
	// Deleting, if set, is told of every namespace deletion before it is written, so a
	// cache behind Get can read that namespace live for a while: its watch may not yet
	// show the namespace terminating (upstream's forceLiveLookup).
	Deleting func(name string)
}

// Admit implements MutationInterface so the refusal comes before any other work.
func (p NamespaceLifecycle) Admit(ctx context.Context, a *Attributes) error {
	if a.Operation == Delete && a.Resource.Resource == "namespaces" && a.Subresource == "" && p.Deleting != nil {
		p.Deleting(a.Name)
		return nil
	}
	if a.Operation != Create || a.Namespace == "" || a.Subresource != "" {
		return nil
	}
	if a.Resource.Resource == "namespaces" {
		return nil
	}
	ns, err := p.Get(ctx, a.Namespace)
	if errors.Is(err, ErrNamespaceNotFound) {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), a.Namespace)
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("namespace lifecycle: read namespace %q: %w", a.Namespace, err))
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	}
	return nil
}

// Defaulting fills in Kubernetes' defaults (restartPolicy, dnsPolicy, ...) on create and
// update.
type Defaulting struct {
	Default func(obj runtime.Object)
}

// Admit implements MutationInterface.
func (p Defaulting) Admit(_ context.Context, a *Attributes) error {
	if p.Default != nil && a.Object != nil && (a.Operation == Create || a.Operation == Update) {
		p.Default(a.Object)
	}
	return nil
}

// DefaultTolerationSeconds gives every pod NoExecute tolerations for the
// node.kubernetes.io/not-ready and unreachable taints, unless it already tolerates them,
// so that pods are evicted from a failed node only after Seconds (300 by default). As
// upstream it acts on updates too: a `kubectl replace` from a manifest without them must
// not read as removing tolerations, which pod updates may not do.
type DefaultTolerationSeconds struct {
	Seconds int64
}

// Admit implements MutationInterface.
func (p DefaultTolerationSeconds) Admit(_ context.Context, a *Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || a.Operation != Create && a.Operation != Update || a.Subresource != "" {
		return nil
	}
	secs := p.Seconds
	if secs <= 0 {
		secs = 300
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if toleratesNoExecute(pod.Spec.Tolerations, key) {
			continue
		}
		s := secs
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s,
		})
	}
	return nil
}

func toleratesNoExecute(ts []corev1.Toleration, key string) bool {
	for _, t := range ts {
		if (t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) &&
			(t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) {
			return true
		}
	}
	return false
}

// Validation checks the final object with Kubernetes' field rules; a failure is 422
// Invalid listing every field error.
type Validation struct {
	Create func(obj runtime.Object) field.ErrorList
	Update func(obj, old runtime.Object) field.ErrorList
	// UpdateSubresource holds the update rules of subresources whose writes follow rules
	// of their own (pods/ephemeralcontainers); other subresources get Update.
	UpdateSubresource map[string]func(obj, old runtime.Object) field.ErrorList
}

// Validate implements ValidationInterface.
func (p Validation) Validate(_ context.Context, a *Attributes) error {
	var errs field.ErrorList
	switch {
	case a.Operation == Create && p.Create != nil:
		errs = p.Create(a.Object)
	case a.Operation == Update && p.UpdateSubresource[a.Subresource] != nil:
		errs = p.UpdateSubresource[a.Subresource](a.Object, a.OldObject)
	case a.Operation == Update && p.Update != nil:
		errs = p.Update(a.Object, a.OldObject)
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(a.Kind.GroupKind(), a.Name, errs)
}

// NodeRestriction limits kubelets (user system:node:<name> in group system:nodes) to
// their own Node and Lease, the status of pods bound to them, and the final deletion of
// those pods. The coarse verb/resource check happens in the API server's authorizer;
// this plugin checks what needs the object.
type NodeRestriction struct{}

// NodeUserPrefix prefixes a kubelet's user name.
const NodeUserPrefix = "system:node:"

// NodesGroup is the group of every kubelet credential.
const NodesGroup = "system:nodes"

// NodeName returns the node a user acts for, or "" if the user is not a kubelet.
func NodeName(u UserInfo) string {
	if !u.InGroup(NodesGroup) || !strings.HasPrefix(u.Name, NodeUserPrefix) {
		return ""
	}
	return strings.TrimPrefix(u.Name, NodeUserPrefix)
}

// Validate implements ValidationInterface.
func (NodeRestriction) Validate(_ context.Context, a *Attributes) error {
	node := NodeName(a.User)
	if node == "" {
		return nil
	}
	switch a.Resource.Resource {
	case "nodes":
		if a.Name != node {
			return Forbidden(a, fmt.Sprintf("node %q may only modify its own Node object", node))
		}
		return nodeSelfRestriction(a, node)
	case "leases":
		if a.Namespace != corev1.NamespaceNodeLease || a.Name != node {
			return Forbidden(a, fmt.Sprintf("node %q may only modify its own Lease in %s", node, corev1.NamespaceNodeLease))
		}
		if l, ok := a.Object.(*coordinationv1.Lease); ok && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != node {
			return Forbidden(a, fmt.Sprintf("node %q may not hold a Lease for %q", node, *l.Spec.HolderIdentity))
		}
	case "persistentvolumes":
		// The local-path provisioner: a node writes only the volumes labelled as its own.
		for _, o := range []runtime.Object{a.Object, a.OldObject} {
			if pv, ok := o.(*corev1.PersistentVolume); ok && pv.Labels["wasmkube.io/local-path-node"] != node {
				return Forbidden(a, fmt.Sprintf("node %q may only modify PersistentVolumes labelled wasmkube.io/local-path-node=%s", node, node))
			}
		}
	case "wasmpolicyreports":
		// A kubelet's reports on its WasmPolicies (plugins/wasmpolicy/report): only its own.
		for _, o := range []runtime.Object{a.Object, a.OldObject} {
			if r, ok := o.(*policyv1alpha1.WasmPolicyReport); ok && (r.Status.Component != policyv1alpha1.ComponentKubelet || r.Status.Name != node) {
				return Forbidden(a, fmt.Sprintf("node %q may only write WasmPolicyReports of component kubelet named %s (status.component, status.name)", node, node))
			}
		}
	case "pods":
		old, _ := a.OldObject.(*corev1.Pod)
		if old == nil || old.Spec.NodeName != node {
			return Forbidden(a, fmt.Sprintf("node %q may only modify pods bound to it", node))
		}
		if a.Operation == Update && a.Subresource != "status" {
			return Forbidden(a, fmt.Sprintf("node %q may only update the status of its pods", node))
		}
	}
	return nil
}

// nodeSelfRestriction is upstream NodeRestriction's check of a kubelet's writes to its own
// Node: it may not set or change labels under node-restriction.kubernetes.io/ (they are
// for admins to steer workloads onto nodes, so a node must not claim them), nor
// kubernetes.io / k8s.io labels other than the kubelet's own (hostname, os, arch, zone,
// instance type, kubelet.kubernetes.io/, node.kubernetes.io/); and it may not change its
// taints once registered.
func nodeSelfRestriction(a *Attributes, node string) error {
	// Every write to the Node, nodes/status included: a status write may carry labels
	// (as upstream's), and a forbidden one is refused there too.
	n, ok := a.Object.(*corev1.Node)
	if !ok {
		return nil
	}
	old, _ := a.OldObject.(*corev1.Node)
	var forbidden []string
	for k, v := range n.Labels {
		if old != nil {
			if ov, had := old.Labels[k]; had && ov == v {
				continue
			}
		}
		if forbiddenNodeLabel(k) {
			forbidden = append(forbidden, k)
		}
	}
	if old != nil {
		for k := range old.Labels {
			if _, kept := n.Labels[k]; !kept && forbiddenNodeLabel(k) {
				forbidden = append(forbidden, k)
			}
		}
	}
	if len(forbidden) > 0 {
		sort.Strings(forbidden)
		verb := "set"
		if old != nil {
			verb = "modify"
		}
		return Forbidden(a, fmt.Sprintf("node %q is not allowed to %s the following labels: %s", node, verb, strings.Join(forbidden, ", ")))
	}
	if old != nil && !apiequality.Semantic.DeepEqual(old.Spec.Taints, n.Spec.Taints) {
		return Forbidden(a, fmt.Sprintf("node %q is not allowed to modify taints", node))
	}
	return nil
}

// NodeRestrictionLabelPrefix is the label domain only admins may set on Nodes.
const NodeRestrictionLabelPrefix = "node-restriction.kubernetes.io"

var kubeletLabels = map[string]bool{
	"kubernetes.io/hostname": true, "kubernetes.io/os": true, "kubernetes.io/arch": true,
	"beta.kubernetes.io/os": true, "beta.kubernetes.io/arch": true, "beta.kubernetes.io/instance-type": true,
	"node.kubernetes.io/instance-type":         true,
	"failure-domain.beta.kubernetes.io/region": true, "failure-domain.beta.kubernetes.io/zone": true,
	"topology.kubernetes.io/region": true, "topology.kubernetes.io/zone": true,
}

func labelDomain(key string) string {
	if i := strings.Index(key, "/"); i >= 0 {
		return key[:i]
	}
	return ""
}

func inDomain(d, domain string) bool { return d == domain || strings.HasSuffix(d, "."+domain) }

func forbiddenNodeLabel(key string) bool {
	d := labelDomain(key)
	if inDomain(d, NodeRestrictionLabelPrefix) {
		return true
	}
	if !inDomain(d, "kubernetes.io") && !inDomain(d, "k8s.io") {
		return false
	}
	return !kubeletLabels[key] && !inDomain(d, "kubelet.kubernetes.io") && !inDomain(d, "node.kubernetes.io")
}
