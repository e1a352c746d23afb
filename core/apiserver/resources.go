package apiserver

import (
	"reflect"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/wasmkube/wasmkube/core/apiserver/crd"
)

// resource describes one served resource; the generic store and discovery are driven
// entirely by this table.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	namespaced bool
	shortNames []string
	categories []string
	// createOnly resources (tokenreviews, self reviews) are not stored.
	createOnly bool
	// readOnly resources (metrics.k8s.io) are not stored either: get and list are
	// answered from elsewhere (metricsapi.go).
	readOnly bool
	// noDeleteCollection refuses DELETE on the collection (405), as upstream does for
	// namespaces: one request must not be able to empty the cluster.
	noDeleteCollection bool
	// subresources served besides the object itself.
	subresources []string
	// generation: metadata.generation counts spec changes.
	generation bool
	newFunc    func() runtime.Object
	newList    func() runtime.Object
	// fields returns the values field selectors may match, besides metadata.name and
	// metadata.namespace.
	fields func(obj runtime.Object) map[string]string
	// watchIndex is a field label (pods: spec.nodeName) by which the watch cache files
	// watches, as upstream's trigger functions: a watch whose field selector requires an
	// exact value of it is handed only events of objects that had or have that value.
	// indexOf returns an object's value of it.
	watchIndex string
	indexOf    func(obj runtime.Object) string
	// custom is the compiled CRD version of a custom resource (customresources.go); nil
	// for the built-in ones.
	custom *crd.Version
	// storedAs is the resource this one is a version view of (versions.go): the same
	// objects, stored in that resource's version and converted on the way in and out.
	storedAs *resource
}

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

func (r *resource) hasSub(s string) bool {
	for _, x := range r.subresources {
		if x == s {
			return true
		}
	}
	return false
}

// hasStatus reports whether main updates keep status (and /status updates keep the rest).
func (r *resource) hasStatus() bool { return r.hasSub("status") }

var allCategory = []string{"all"}

var crudVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// verbs are the verbs discovery lists for r.
func (r *resource) verbs() metav1.Verbs {
	switch {
	case r.createOnly:
		return metav1.Verbs{"create"}
	case r.readOnly:
		return metav1.Verbs{"get", "list"}
	case r.noDeleteCollection:
		var v metav1.Verbs
		for _, x := range crudVerbs {
			if x != "deletecollection" {
				v = append(v, x)
			}
		}
		return v
	}
	return crudVerbs
}

func podFields(o runtime.Object) map[string]string {
	p := o.(*corev1.Pod)
	return map[string]string{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         boolString(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func nodeFields(o runtime.Object) map[string]string {
	return map[string]string{"spec.unschedulable": boolString(o.(*corev1.Node).Spec.Unschedulable)}
}

func namespaceFields(o runtime.Object) map[string]string {
	return map[string]string{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
}

func eventFields(o runtime.Object) map[string]string {
	e := o.(*corev1.Event)
	return map[string]string{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}
}

func replicaSetFields(o runtime.Object) map[string]string {
	rs := o.(*appsv1.ReplicaSet)
	return map[string]string{"status.replicas": strconv.Itoa(int(rs.Status.Replicas))}
}

// jobFields: upstream's Job field label (kubectl get jobs --field-selector status.successful=1).
func jobFields(o runtime.Object) map[string]string {
	return map[string]string{"status.successful": strconv.Itoa(int(o.(*batchv1.Job).Status.Succeeded))}
}

func newOf[T any, PT interface {
	*T
	runtime.Object
}]() func() runtime.Object {
	return func() runtime.Object { return PT(new(T)) }
}

// resources is everything the server serves, in discovery order.
var resources = []*resource{
	{gvr: corev1.SchemeGroupVersion.WithResource("namespaces"), kind: "Namespace", singular: "namespace", noDeleteCollection: true,
		shortNames: []string{"ns"}, subresources: []string{"status", "finalize"},
		newFunc: newOf[corev1.Namespace](), newList: newOf[corev1.NamespaceList](), fields: namespaceFields},
	{gvr: corev1.SchemeGroupVersion.WithResource("pods"), kind: "Pod", singular: "pod", namespaced: true,
		shortNames: []string{"po"}, categories: allCategory, subresources: []string{"status", "binding", "log", "eviction", "proxy"},
		newFunc: newOf[corev1.Pod](), newList: newOf[corev1.PodList](), fields: podFields,
		watchIndex: "spec.nodeName", indexOf: func(o runtime.Object) string { return o.(*corev1.Pod).Spec.NodeName }},
	{gvr: corev1.SchemeGroupVersion.WithResource("nodes"), kind: "Node", singular: "node",
		shortNames: []string{"no"}, subresources: []string{"status", "proxy"},
		newFunc: newOf[corev1.Node](), newList: newOf[corev1.NodeList](), fields: nodeFields},
	{gvr: corev1.SchemeGroupVersion.WithResource("events"), kind: "Event", singular: "event", namespaced: true,
		shortNames: []string{"ev"},
		newFunc:    newOf[corev1.Event](), newList: newOf[corev1.EventList](), fields: eventFields},
	{gvr: corev1.SchemeGroupVersion.WithResource("services"), kind: "Service", singular: "service", namespaced: true,
		shortNames: []string{"svc"}, categories: allCategory, subresources: []string{"status", "proxy"},
		newFunc: newOf[corev1.Service](), newList: newOf[corev1.ServiceList]()},
	{gvr: corev1.SchemeGroupVersion.WithResource("endpoints"), kind: "Endpoints", singular: "endpoints", namespaced: true,
		shortNames: []string{"ep"},
		newFunc:    newOf[corev1.Endpoints](), newList: newOf[corev1.EndpointsList]()},
	{gvr: corev1.SchemeGroupVersion.WithResource("configmaps"), kind: "ConfigMap", singular: "configmap", namespaced: true,
		shortNames: []string{"cm"},
		newFunc:    newOf[corev1.ConfigMap](), newList: newOf[corev1.ConfigMapList]()},
	// Secrets and ServiceAccounts (issue 14; secrets.go, serviceaccounts.go): secrets are
	// encrypted at rest (encryption/), serviceaccounts/token is the TokenRequest API.
	{gvr: corev1.SchemeGroupVersion.WithResource("secrets"), kind: "Secret", singular: "secret", namespaced: true,
		newFunc: newOf[corev1.Secret](), newList: newOf[corev1.SecretList](), fields: secretFields},
	{gvr: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), kind: "ServiceAccount", singular: "serviceaccount", namespaced: true,
		shortNames: []string{"sa"}, subresources: []string{"token"},
		newFunc: newOf[corev1.ServiceAccount](), newList: newOf[corev1.ServiceAccountList]()},
	// Volumes (issue 15; volumes.go, docs/volumes.md): claims, volumes and their classes.
	{gvr: corev1.SchemeGroupVersion.WithResource("persistentvolumes"), kind: "PersistentVolume", singular: "persistentvolume",
		shortNames: []string{"pv"}, subresources: []string{"status"},
		newFunc: newOf[corev1.PersistentVolume](), newList: newOf[corev1.PersistentVolumeList]()},
	{gvr: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), kind: "PersistentVolumeClaim", singular: "persistentvolumeclaim", namespaced: true,
		shortNames: []string{"pvc"}, subresources: []string{"status"},
		newFunc: newOf[corev1.PersistentVolumeClaim](), newList: newOf[corev1.PersistentVolumeClaimList]()},
	{gvr: appsv1.SchemeGroupVersion.WithResource("deployments"), kind: "Deployment", singular: "deployment", namespaced: true,
		shortNames: []string{"deploy"}, categories: allCategory, subresources: []string{"status", "scale"}, generation: true,
		newFunc: newOf[appsv1.Deployment](), newList: newOf[appsv1.DeploymentList]()},
	{gvr: appsv1.SchemeGroupVersion.WithResource("replicasets"), kind: "ReplicaSet", singular: "replicaset", namespaced: true,
		shortNames: []string{"rs"}, categories: allCategory, subresources: []string{"status", "scale"}, generation: true,
		newFunc: newOf[appsv1.ReplicaSet](), newList: newOf[appsv1.ReplicaSetList](), fields: replicaSetFields},
	// Workload controllers (issue 14): StatefulSets, DaemonSets, their ControllerRevisions,
	// Jobs and CronJobs, with upstream's short names, categories and subresources.
	{gvr: appsv1.SchemeGroupVersion.WithResource("statefulsets"), kind: "StatefulSet", singular: "statefulset", namespaced: true,
		shortNames: []string{"sts"}, categories: allCategory, subresources: []string{"status", "scale"}, generation: true,
		newFunc: newOf[appsv1.StatefulSet](), newList: newOf[appsv1.StatefulSetList]()},
	{gvr: appsv1.SchemeGroupVersion.WithResource("daemonsets"), kind: "DaemonSet", singular: "daemonset", namespaced: true,
		shortNames: []string{"ds"}, categories: allCategory, subresources: []string{"status"}, generation: true,
		newFunc: newOf[appsv1.DaemonSet](), newList: newOf[appsv1.DaemonSetList]()},
	{gvr: appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), kind: "ControllerRevision", singular: "controllerrevision", namespaced: true,
		newFunc: newOf[appsv1.ControllerRevision](), newList: newOf[appsv1.ControllerRevisionList]()},
	{gvr: batchv1.SchemeGroupVersion.WithResource("jobs"), kind: "Job", singular: "job", namespaced: true,
		categories: allCategory, subresources: []string{"status"}, generation: true,
		newFunc: newOf[batchv1.Job](), newList: newOf[batchv1.JobList](), fields: jobFields},
	{gvr: batchv1.SchemeGroupVersion.WithResource("cronjobs"), kind: "CronJob", singular: "cronjob", namespaced: true,
		shortNames: []string{"cj"}, categories: allCategory, subresources: []string{"status"}, generation: true,
		newFunc: newOf[batchv1.CronJob](), newList: newOf[batchv1.CronJobList]()},
	{gvr: storagev1.SchemeGroupVersion.WithResource("storageclasses"), kind: "StorageClass", singular: "storageclass",
		shortNames: []string{"sc"},
		newFunc:    newOf[storagev1.StorageClass](), newList: newOf[storagev1.StorageClassList]()},
	// Autoscaling (issue 15; core/controller/podautoscaler, docs/controllers.md).
	// Stored in autoscaling/v2 (the preferred version), served in autoscaling/v1 too
	// (versions.go, conversion/).
	hpaV2, hpaV1,
	// The resource metrics API (metricsapi.go): kubectl top and the HPA controller read it.
	{gvr: metricsv1beta1.SchemeGroupVersion.WithResource("nodes"), kind: "NodeMetrics", singular: "nodemetrics", readOnly: true,
		newFunc: newOf[metricsv1beta1.NodeMetrics](), newList: newOf[metricsv1beta1.NodeMetricsList]()},
	{gvr: metricsv1beta1.SchemeGroupVersion.WithResource("pods"), kind: "PodMetrics", singular: "podmetrics", namespaced: true, readOnly: true,
		newFunc: newOf[metricsv1beta1.PodMetrics](), newList: newOf[metricsv1beta1.PodMetricsList]()},
	{gvr: coordinationv1.SchemeGroupVersion.WithResource("leases"), kind: "Lease", singular: "lease", namespaced: true,
		newFunc: newOf[coordinationv1.Lease](), newList: newOf[coordinationv1.LeaseList]()},
	{gvr: authenticationv1.SchemeGroupVersion.WithResource("tokenreviews"), kind: "TokenReview", singular: "tokenreview",
		createOnly: true,
		newFunc:    newOf[authenticationv1.TokenReview]()},
	// kubectl auth whoami and kubectl auth can-i ask these about the caller.
	{gvr: authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews"), kind: "SelfSubjectReview", singular: "selfsubjectreview",
		createOnly: true,
		newFunc:    newOf[authenticationv1.SelfSubjectReview]()},
	{gvr: authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews"), kind: "SelfSubjectAccessReview", singular: "selfsubjectaccessreview",
		createOnly: true,
		newFunc:    newOf[authorizationv1.SelfSubjectAccessReview]()},
	{gvr: authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews"), kind: "SelfSubjectRulesReview", singular: "selfsubjectrulesreview",
		createOnly: true,
		newFunc:    newOf[authorizationv1.SelfSubjectRulesReview]()},
	// RBAC (issue 16; rbac.go): the authorizer reads these, subjectaccessreviews ask it.
	{gvr: authorizationv1.SchemeGroupVersion.WithResource("subjectaccessreviews"), kind: "SubjectAccessReview", singular: "subjectaccessreview",
		createOnly: true, newFunc: newOf[authorizationv1.SubjectAccessReview]()},
	{gvr: authorizationv1.SchemeGroupVersion.WithResource("localsubjectaccessreviews"), kind: "LocalSubjectAccessReview", singular: "localsubjectaccessreview",
		namespaced: true, createOnly: true, newFunc: newOf[authorizationv1.LocalSubjectAccessReview]()},
	{gvr: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), kind: "ClusterRole", singular: "clusterrole",
		newFunc: newOf[rbacv1.ClusterRole](), newList: newOf[rbacv1.ClusterRoleList]()},
	{gvr: rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), kind: "ClusterRoleBinding", singular: "clusterrolebinding",
		newFunc: newOf[rbacv1.ClusterRoleBinding](), newList: newOf[rbacv1.ClusterRoleBindingList]()},
	{gvr: rbacv1.SchemeGroupVersion.WithResource("roles"), kind: "Role", singular: "role", namespaced: true,
		newFunc: newOf[rbacv1.Role](), newList: newOf[rbacv1.RoleList]()},
	{gvr: rbacv1.SchemeGroupVersion.WithResource("rolebindings"), kind: "RoleBinding", singular: "rolebinding", namespaced: true,
		newFunc: newOf[rbacv1.RoleBinding](), newList: newOf[rbacv1.RoleBindingList]()},
	// CustomResourceDefinitions (issue 15; customresources.go, crd/, docs/crds.md): each
	// served version of each becomes a resource of its own at run time.
	{gvr: crd.Resource, kind: "CustomResourceDefinition", singular: "customresourcedefinition",
		shortNames: []string{"crd", "crds"}, categories: []string{"api-extensions"}, subresources: []string{"status"}, generation: true,
		newFunc: newOf[apiextensionsv1.CustomResourceDefinition](), newList: newOf[apiextensionsv1.CustomResourceDefinitionList]()},
	// Policy objects and the kinds kubectl touches by default (issue 15; docs/api-objects.md):
	// disruption budgets (pods/eviction honours them), priority classes, quotas and limit
	// ranges (built-in admission), replication controllers (stored for apply --prune and
	// cluster-info dump, not reconciled), ingresses and network policies (served, not enforced).
	{gvr: policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), kind: "PodDisruptionBudget", singular: "poddisruptionbudget", namespaced: true,
		shortNames: []string{"pdb"}, subresources: []string{"status"}, generation: true,
		newFunc: newOf[policyv1.PodDisruptionBudget](), newList: newOf[policyv1.PodDisruptionBudgetList]()},
	{gvr: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), kind: "PriorityClass", singular: "priorityclass",
		shortNames: []string{"pc"},
		newFunc:    newOf[schedulingv1.PriorityClass](), newList: newOf[schedulingv1.PriorityClassList]()},
	{gvr: corev1.SchemeGroupVersion.WithResource("resourcequotas"), kind: "ResourceQuota", singular: "resourcequota", namespaced: true,
		shortNames: []string{"quota"}, subresources: []string{"status"},
		newFunc: newOf[corev1.ResourceQuota](), newList: newOf[corev1.ResourceQuotaList]()},
	{gvr: corev1.SchemeGroupVersion.WithResource("limitranges"), kind: "LimitRange", singular: "limitrange", namespaced: true,
		shortNames: []string{"limits"},
		newFunc:    newOf[corev1.LimitRange](), newList: newOf[corev1.LimitRangeList]()},
	{gvr: corev1.SchemeGroupVersion.WithResource("replicationcontrollers"), kind: "ReplicationController", singular: "replicationcontroller", namespaced: true,
		shortNames: []string{"rc"}, categories: allCategory, subresources: []string{"status"}, generation: true,
		newFunc: newOf[corev1.ReplicationController](), newList: newOf[corev1.ReplicationControllerList]()},
	{gvr: networkingv1.SchemeGroupVersion.WithResource("ingresses"), kind: "Ingress", singular: "ingress", namespaced: true,
		shortNames: []string{"ing"}, subresources: []string{"status"}, generation: true,
		newFunc: newOf[networkingv1.Ingress](), newList: newOf[networkingv1.IngressList]()},
	{gvr: networkingv1.SchemeGroupVersion.WithResource("ingressclasses"), kind: "IngressClass", singular: "ingressclass",
		newFunc: newOf[networkingv1.IngressClass](), newList: newOf[networkingv1.IngressClassList]()},
	{gvr: networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), kind: "NetworkPolicy", singular: "networkpolicy", namespaced: true,
		shortNames: []string{"netpol"}, generation: true,
		newFunc: newOf[networkingv1.NetworkPolicy](), newList: newOf[networkingv1.NetworkPolicyList]()},
	{gvr: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), kind: "EndpointSlice", singular: "endpointslice", namespaced: true,
		newFunc: newOf[discoveryv1.EndpointSlice](), newList: newOf[discoveryv1.EndpointSliceList]()},
}

// registry finds resources by group, version and plural name.
type registry map[schema.GroupVersionResource]*resource

func newRegistry() registry {
	r := registry{}
	for _, res := range resources {
		r[res.gvr] = res
	}
	return r
}

// groupVersions lists served group versions in discovery order; the core group first.
func groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		gv := r.gvr.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}

// fieldOf returns the struct field name (Spec, Status) of obj, or an invalid Value.
func fieldOf(obj runtime.Object, name string) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName(name)
}
