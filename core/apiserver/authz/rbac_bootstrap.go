package authz

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/auth/rbac/reconciliation"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// The default roles and bindings, as upstream's bootstrappolicy, reduced to what wasmkube
// serves and runs. They are reconciled at every start with upstream's reconciler
// (k8s.io/component-helpers/auth/rbac/reconciliation): missing ones are created, missing
// rules and subjects added, nothing removed, and an object annotated
// rbac.authorization.kubernetes.io/autoupdate=false is left as the admin edited it.

const (
	bootstrapLabel   = "kubernetes.io/bootstrapping"
	autoupdateAnno   = "rbac.authorization.kubernetes.io/autoupdate"
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"

	// The users the scheduler and the controller manager act as when they run with their
	// own credential (upstream's names).
	SchedulerUser         = "system:kube-scheduler"
	ControllerManagerUser = "system:kube-controller-manager"
)

func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func urlRule(verbs []string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: urls}
}

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "delete", "deletecollection", "patch", "update"}
	readWrite = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	core      = []string{""}
	apps      = []string{"apps"}
	batch     = []string{"batch"}
	rbacGroup = []string{rbacv1.GroupName}

	certificates = []string{"certificates.k8s.io"}
)

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	l := map[string]string{bootstrapLabel: "rbac-defaults"}
	for k, v := range labels {
		l[k] = v
	}
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{autoupdateAnno: "true"}},
		Rules:      rules,
	}
}

func aggregated(name, selectorLabel string, labels map[string]string) *rbacv1.ClusterRole {
	cr := clusterRole(name, labels)
	cr.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{selectorLabel: "true"}},
	}}
	return cr
}

// bootstrapClusterRoles are the default ClusterRoles.
func bootstrapClusterRoles() []*rbacv1.ClusterRole {
	return []*rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			rule([]string{"*"}, []string{"*"}, "*"), urlRule([]string{"*"}, "*")),
		// What every authenticated user may do. /explorer is the decision explorer's
		// page: it holds no data (the records it shows are authorized one by one).
		clusterRole("system:discovery", nil,
			urlRule([]string{"get"}, "/api", "/api/*", "/apis", "/apis/*", "/explorer", "/explorer/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")),
		clusterRole("system:public-info-viewer", nil,
			urlRule([]string{"get"}, "/healthz", "/livez", "/readyz", "/version", "/version/")),
		clusterRole("system:basic-user", nil,
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "selfsubjectreviews")),
		// The user-facing roles: their rules are aggregated from the system:aggregate-to-*
		// roles below and from any ClusterRole an admin labels the same way.
		aggregated("admin", aggregateToAdmin, nil),
		aggregated("edit", aggregateToEdit, map[string]string{aggregateToAdmin: "true"}),
		aggregated("view", aggregateToView, map[string]string{aggregateToEdit: "true"}),
		clusterRole("system:aggregate-to-admin", map[string]string{aggregateToAdmin: "true"},
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "localsubjectaccessreviews"),
			rule(readWrite, rbacGroup, "rolebindings", "roles")),
		clusterRole("system:aggregate-to-edit", map[string]string{aggregateToEdit: "true"},
			// Read on the escalating resources (view has none of them): kubectl exec,
			// attach and port-forward over WebSockets are GETs on pods/exec, pods/attach
			// and pods/portforward, so without it edit and admin could not use them.
			rule(read, core, "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
			rule([]string{"impersonate"}, core, "serviceaccounts"),
			rule(write, core, "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
			rule([]string{"create"}, core, "pods/eviction"),
			rule(write, core, "configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
				"replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"),
			rule([]string{"create"}, core, "serviceaccounts/token"),
			rule(write, apps, "daemonsets", "deployments", "deployments/rollback", "deployments/scale",
				"replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"),
			rule(write, []string{"autoscaling"}, "horizontalpodautoscalers"),
			rule(write, batch, "cronjobs", "jobs"),
			rule(write, []string{"policy"}, "poddisruptionbudgets"),
			rule(write, []string{"networking.k8s.io"}, "ingresses", "networkpolicies"),
			rule(write, []string{"resource.k8s.io"}, "resourceclaims", "resourceclaimtemplates"),
			rule(readWrite, []string{"coordination.k8s.io"}, "leases"),
			rule(read, core, "secrets")),
		clusterRole("system:aggregate-to-view", map[string]string{aggregateToView: "true"},
			rule(read, core, "pods", "configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
				"replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"),
			rule(read, core, "bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
				"replicationcontrollers/status", "resourcequotas", "resourcequotas/status"),
			rule(read, core, "namespaces"),
			rule(read, []string{"discovery.k8s.io"}, "endpointslices"),
			rule(read, apps, "controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
				"deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
				"statefulsets/scale", "statefulsets/status"),
			rule(read, []string{"autoscaling"}, "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
			rule(read, batch, "cronjobs", "cronjobs/status", "jobs", "jobs/status"),
			rule(read, []string{"policy"}, "poddisruptionbudgets", "poddisruptionbudgets/status"),
			rule(read, []string{"networking.k8s.io"}, "ingresses", "ingresses/status", "networkpolicies"),
			rule(read, []string{"resource.k8s.io"}, "resourceclaims", "resourceclaims/status", "resourceclaimtemplates")),
		// Upstream's roles for add-ons and node bootstrap. wasmkube runs none of these
		// components itself; the roles are there so that manifests binding them (a DNS
		// server, a volume provisioner, a problem detector) work as on upstream.
		clusterRole("system:heapster", nil,
			rule(read, core, "events", "namespaces", "nodes", "pods"),
			rule(read, []string{"extensions"}, "deployments")),
		clusterRole("system:node-problem-detector", nil,
			rule([]string{"get"}, core, "nodes"),
			rule([]string{"patch"}, core, "nodes/status"),
			eventsRule()),
		clusterRole("system:node-bootstrapper", nil,
			rule([]string{"create", "get", "list", "watch"}, certificates, "certificatesigningrequests")),
		clusterRole("system:kube-aggregator", nil,
			rule(read, core, "endpoints", "services")),
		clusterRole("system:kube-dns", nil,
			rule([]string{"list", "watch"}, core, "endpoints", "services")),
		// Upstream's roles of its two EndpointSlice controllers (each bound to its service
		// account in kube-system); wasmkube's run in the controller manager under its own
		// credential (system:kube-controller-manager below), so these are for manifests and
		// tools that look for them.
		clusterRole("system:controller:endpointslice-controller", nil,
			rule(read, core, "services", "pods", "nodes"),
			rule([]string{"update"}, core, "services/finalizers"),
			rule([]string{"create", "delete", "get", "list", "update"}, []string{"discovery.k8s.io"}, "endpointslices"),
			eventsRule()),
		clusterRole("system:controller:endpointslicemirroring-controller", nil,
			rule(read, core, "services", "endpoints"),
			rule([]string{"update"}, core, "services/finalizers", "endpoints/finalizers"),
			rule([]string{"create", "delete", "get", "list", "update"}, []string{"discovery.k8s.io"}, "endpointslices"),
			eventsRule()),
		clusterRole("system:persistent-volume-provisioner", nil,
			rule([]string{"create", "delete", "get", "list", "watch"}, core, "persistentvolumes"),
			rule([]string{"get", "list", "update", "watch"}, core, "persistentvolumeclaims"),
			rule(read, []string{"storage.k8s.io"}, "storageclasses"),
			rule([]string{"watch"}, core, "events"),
			eventsRule()),
		clusterRole("system:volume-scheduler", nil,
			rule([]string{"get", "list", "patch", "update", "watch"}, core, "persistentvolumes"),
			rule(read, []string{"storage.k8s.io"}, "storageclasses"),
			rule([]string{"get", "list", "patch", "update", "watch"}, core, "persistentvolumeclaims")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient", nil,
			rule([]string{"create"}, certificates, "certificatesigningrequests/nodeclient")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", nil,
			rule([]string{"create"}, certificates, "certificatesigningrequests/selfnodeclient")),
		signerApprover("system:certificates.k8s.io:legacy-unknown-approver", "kubernetes.io/legacy-unknown"),
		signerApprover("system:certificates.k8s.io:kubelet-serving-approver", "kubernetes.io/kubelet-serving"),
		signerApprover("system:certificates.k8s.io:kube-apiserver-client-approver", "kubernetes.io/kube-apiserver-client"),
		signerApprover("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", "kubernetes.io/kube-apiserver-client-kubelet"),
		// The nodes' permissions: kubelets get them from the node authorizer; the role is
		// there for reading (and binding to a credential that is not a node's).
		clusterRole("system:node", nil, nodeRules...),
		clusterRole("system:node-proxier", nil,
			rule(read, core, "endpoints", "services", "nodes"),
			rule(read, []string{"discovery.k8s.io"}, "endpointslices"),
			rule([]string{"create", "patch", "update"}, []string{"", "events.k8s.io"}, "events")),
		// The node's NetworkPolicy enforcer (kubelet/netpol) reads every pod, namespace
		// and policy of the cluster, as k3s's agent does for its network policy
		// controller. It has a credential of its own (group
		// system:wasmkube:network-policy-agents, netpolcred.go), so the kubelet's stays
		// within upstream's node authorizer (docs/networkpolicy.md).
		clusterRole("system:wasmkube:network-policy-agent", nil,
			rule([]string{"list", "watch"}, core, "pods", "namespaces"),
			rule(read, []string{"networking.k8s.io"}, "networkpolicies")),
		clusterRole("system:kubelet-api-admin", nil,
			rule(read, core, "nodes"),
			rule([]string{"proxy"}, core, "nodes"),
			rule([]string{"*"}, core, "nodes/proxy", "nodes/log", "nodes/stats", "nodes/metrics", "nodes/spec", "nodes/configz", "nodes/healthz", "nodes/pods", "nodes/checkpoint")),
		clusterRole("system:auth-delegator", nil,
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "tokenreviews"),
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "subjectaccessreviews")),
		clusterRole("system:monitoring", nil,
			urlRule([]string{"get"}, "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*")),
		clusterRole("system:service-account-issuer-discovery", nil,
			urlRule([]string{"get"}, "/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/")),
		// What wasmkube's scheduler (core/scheduler) reads and writes: pods and nodes,
		// bindings, nominations in pod status, its Lease and the Events on it. Unlike
		// upstream's it may patch pods: it writes its explanation annotation
		// (scheduler.wasmkube.io/explain, docs/scheduler.md) on the pods it binds.
		clusterRole("system:kube-scheduler", nil,
			rule([]string{"create", "patch", "update"}, []string{"", "events.k8s.io"}, "events"),
			// Its decision records, pushed to the API server (docs/explorer.md).
			rule([]string{"create"}, []string{"explorer.wasmkube.io"}, "records"),
			rule([]string{"create", "get", "list", "watch", "update", "patch"}, []string{"coordination.k8s.io"}, "leases"),
			rule(read, core, "nodes", "namespaces", "services", "replicationcontrollers", "persistentvolumeclaims", "persistentvolumes", "configmaps"),
			rule([]string{"delete", "get", "list", "watch", "patch"}, core, "pods"),
			rule([]string{"create"}, core, "bindings", "pods/binding"),
			rule([]string{"patch", "update"}, core, "pods/status"),
			rule(read, apps, "replicasets", "statefulsets"),
			// VolumeBinding: a WaitForFirstConsumer claim gets the selected-node annotation.
			rule([]string{"patch", "update"}, core, "persistentvolumeclaims"),
			rule(read, []string{"storage.k8s.io"}, "storageclasses"),
			rule(read, []string{"policy"}, "poddisruptionbudgets"),
			// Gang scheduling (docs/scheduler.md): the groups and their status.
			rule(read, []string{"scheduling.k8s.io"}, "podgroups", "workloads"),
			rule([]string{"patch", "update"}, []string{"scheduling.k8s.io"}, "podgroups/status"),
			// Upstream's rules for the CSI and dynamic resource allocation kinds its
			// volume and DynamicResources plugins read, so that upstream kube-scheduler runs
			// against wasmkube under this role (docs/apiserver.md, "Upstream components").
			rule(read, []string{"storage.k8s.io"}, "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments"),
			rule(read, []string{"resource.k8s.io"}, "deviceclasses", "resourceslices", "devicetaintrules"),
			rule([]string{"get", "list", "watch", "update", "patch"}, []string{"resource.k8s.io"}, "resourceclaims", "resourceclaims/status"),
			rule([]string{"update"}, core, "pods/finalizers"),
			// Its wasm policies (plugins/wasmpolicy): the WasmPolicies, its reports on them.
			rule(read, []string{"policy.wasmkube.io"}, "wasmpolicies"),
			rule([]string{"create", "get", "update"}, []string{"policy.wasmkube.io"}, "wasmpolicyreports"),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "tokenreviews"),
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "subjectaccessreviews")),
		// wasmkube's controller manager runs every controller under one credential (upstream
		// gives each its own service account), so its role is their union: the workload
		// controllers' writes, the node lifecycle's Node and pod writes, and the garbage
		// collector's and namespace controller's read-and-delete of every resource. It
		// holds no escalate, bind or impersonate, and nothing outside the API's resources.
		clusterRole("system:kube-controller-manager", nil,
			rule([]string{"get", "list", "watch", "patch", "update", "delete", "deletecollection"}, []string{"*"}, "*"),
			rule([]string{"create"}, core, "pods", "events", "endpoints", "serviceaccounts", "serviceaccounts/token", "pods/eviction", "pods/binding",
				"configmaps"), // configmaps: kube-root-ca.crt in every namespace (upstream's root-ca-cert-publisher)
			rule([]string{"create"}, []string{"events.k8s.io"}, "events"),
			rule([]string{"create"}, apps, "replicasets", "controllerrevisions"),
			rule([]string{"create"}, batch, "jobs"),
			rule([]string{"create"}, core, "persistentvolumeclaims"), // StatefulSet volumeClaimTemplates
			rule([]string{"create"}, []string{"discovery.k8s.io"}, "endpointslices"),
			rule([]string{"create"}, []string{"coordination.k8s.io"}, "leases"),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "tokenreviews"),
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "subjectaccessreviews")),
	}
}

// eventsRule is upstream's: write Events in either API group.
func eventsRule() rbacv1.PolicyRule {
	return rule([]string{"create", "patch", "update"}, []string{"", "events.k8s.io"}, "events")
}

// signerApprover may approve certificate requests for one signer, as upstream's
// system:certificates.k8s.io:*-approver roles.
func signerApprover(name, signer string) *rbacv1.ClusterRole {
	r := rule([]string{"approve"}, certificates, "signers")
	r.ResourceNames = []string{signer}
	return clusterRole(name, nil, r)
}

func clusterRoleBinding(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{bootstrapLabel: "rbac-defaults"},
			Annotations: map[string]string{autoupdateAnno: "true"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: subjects,
	}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func bootstrapClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return []*rbacv1.ClusterRoleBinding{
		clusterRoleBinding("cluster-admin", "cluster-admin", groupSubject(MastersGroup)),
		clusterRoleBinding("system:discovery", "system:discovery", groupSubject(AuthenticatedGroup)),
		clusterRoleBinding("system:basic-user", "system:basic-user", groupSubject(AuthenticatedGroup)),
		clusterRoleBinding("system:public-info-viewer", "system:public-info-viewer", groupSubject(AuthenticatedGroup), groupSubject(UnauthenticatedGroup)),
		clusterRoleBinding("system:monitoring", "system:monitoring", groupSubject("system:monitoring")),
		clusterRoleBinding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery", groupSubject(AllServiceAccountsGroup)),
		clusterRoleBinding("system:kube-scheduler", "system:kube-scheduler", userSubject(SchedulerUser)),
		clusterRoleBinding("system:kube-controller-manager", "system:kube-controller-manager", userSubject(ControllerManagerUser)),
		clusterRoleBinding("system:node-proxier", "system:node-proxier", userSubject("system:kube-proxy")),
		clusterRoleBinding("system:wasmkube:network-policy-agent", "system:wasmkube:network-policy-agent", groupSubject(NetworkPolicyAgentsGroup)),
		clusterRoleBinding("system:volume-scheduler", "system:volume-scheduler", userSubject(SchedulerUser)),
		clusterRoleBinding("system:kube-dns", "system:kube-dns",
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "kube-dns"}),
		clusterRoleBinding("system:controller:endpointslice-controller", "system:controller:endpointslice-controller",
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "endpointslice-controller"}),
		clusterRoleBinding("system:controller:endpointslicemirroring-controller", "system:controller:endpointslicemirroring-controller",
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "endpointslicemirroring-controller"}),
		// As upstream: bound to no one, kubelets are authorized by the node authorizer.
		clusterRoleBinding("system:node", "system:node"),
	}
}

// bootstrapRBAC reconciles the default roles and bindings. Several servers starting at
// once are fine: a create that loses is re-read, an update that conflicts retried.
func bootstrapRBAC(ctx context.Context, clusterRoles, clusterRoleBindings *registry.Store) error {
	roles := &storeRoleModifier{ctx: ctx, st: clusterRoles}
	for _, cr := range bootstrapClusterRoles() {
		err := retryConflict(func() error {
			_, err := (&reconciliation.ReconcileRoleOptions{
				Role: reconciliation.ClusterRoleRuleOwner{ClusterRole: cr.DeepCopy()}, Client: roles, Confirm: true,
			}).Run()
			return err
		})
		if err != nil {
			return fmt.Errorf("reconcile clusterrole %s: %w", cr.Name, err)
		}
	}
	bindings := &storeBindingModifier{ctx: ctx, st: clusterRoleBindings}
	for _, crb := range bootstrapClusterRoleBindings() {
		err := retryConflict(func() error {
			_, err := (&reconciliation.ReconcileRoleBindingOptions{
				RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: crb.DeepCopy()}, Client: bindings, Confirm: true,
			}).Run()
			return err
		})
		if err != nil {
			return fmt.Errorf("reconcile clusterrolebinding %s: %w", crb.Name, err)
		}
	}
	return nil
}

func retryConflict(fn func() error) error {
	var err error
	for range 5 {
		if err = fn(); err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// storeErr turns storage errors into the API errors the reconciler tests for.
func storeErr(st *registry.Store, err error, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(st.Resource.GVR.GroupResource(), name)
	case errors.Is(err, storage.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(st.Resource.GVR.GroupResource(), name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(st.Resource.GVR.GroupResource(), name, err)
	}
	return err
}

func storeCreate(ctx context.Context, st *registry.Store, obj runtime.Object) (runtime.Object, error) {
	m := registry.ObjMeta(obj)
	st.PrepareForCreate(obj, metav1.Now())
	out, err := st.Storage.Create(ctx, st.Key(m.GetNamespace(), m.GetName()), st.TrackServerWrite(registry.ServerManager, nil, obj))
	return out, storeErr(st, err, m.GetName())
}

func storeUpdate(ctx context.Context, st *registry.Store, obj runtime.Object) (runtime.Object, error) {
	m := registry.ObjMeta(obj)
	rv := m.GetResourceVersion()
	out, err := st.Storage.GuaranteedUpdate(ctx, st.Key(m.GetNamespace(), m.GetName()), &storage.Preconditions{ResourceVersion: &rv},
		func(cur runtime.Object) (runtime.Object, error) {
			return st.TrackServerWrite(registry.ServerManager, cur, obj), nil
		})
	return out, storeErr(st, err, m.GetName())
}

// storeRoleModifier is the reconciler's client for ClusterRoles, on the store.
type storeRoleModifier struct {
	ctx context.Context
	st  *registry.Store
}

func (c *storeRoleModifier) Get(_, name string) (reconciliation.RuleOwner, error) {
	obj, err := c.st.Storage.Get(c.ctx, c.st.Key("", name))
	if err != nil {
		return nil, storeErr(c.st, err, name)
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: obj.(*rbacv1.ClusterRole).DeepCopy()}, nil
}

func (c *storeRoleModifier) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	out, err := storeCreate(c.ctx, c.st, in.GetObject())
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: out.(*rbacv1.ClusterRole)}, nil
}

func (c *storeRoleModifier) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	out, err := storeUpdate(c.ctx, c.st, in.GetObject())
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: out.(*rbacv1.ClusterRole)}, nil
}

// storeBindingModifier is the reconciler's client for ClusterRoleBindings.
type storeBindingModifier struct {
	ctx context.Context
	st  *registry.Store
}

func (c *storeBindingModifier) Get(_, name string) (reconciliation.RoleBinding, error) {
	obj, err := c.st.Storage.Get(c.ctx, c.st.Key("", name))
	if err != nil {
		return nil, storeErr(c.st, err, name)
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: obj.(*rbacv1.ClusterRoleBinding).DeepCopy()}, nil
}

func (c *storeBindingModifier) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	out, err := storeCreate(c.ctx, c.st, in.GetObject())
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: out.(*rbacv1.ClusterRoleBinding)}, nil
}

func (c *storeBindingModifier) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	out, err := storeUpdate(c.ctx, c.st, in.GetObject())
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: out.(*rbacv1.ClusterRoleBinding)}, nil
}

func (c *storeBindingModifier) Delete(_, name string, uid types.UID) error {
	_, err := c.st.Storage.Delete(c.ctx, c.st.Key("", name), &storage.Preconditions{UID: &uid})
	return storeErr(c.st, err, name)
}
