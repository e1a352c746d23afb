// Package registry is what the API server serves and how it stores it: the table of
// resources (a row per built-in resource, in discovery order; a row made per served
// version of each custom resource), the version views that serve one stored kind in
// another version, and the generic Store of one resource over core/storage with the
// per-kind strategies (create's server-owned fields, what an update or a subresource
// may change, graceful deletion and finalizers, selectors, service IP allocation). It
// knows nothing of HTTP: a write gets a WriteRequest from the handlers. A built-in kind is
// served by adding its row to the table (docs/apiserver.md, "Layout").
package registry

import (
	"reflect"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/crd"
)

// Resource describes one served resource; the generic store and discovery are driven
// entirely by this table.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Singular   string
	Namespaced bool
	ShortNames []string
	Categories []string
	// CreateOnly resources (tokenreviews, self reviews) are not stored.
	CreateOnly bool
	// ReadOnly resources (metrics.k8s.io) are not stored either: get and list are
	// answered from elsewhere (metricsapi.go).
	ReadOnly bool
	// NoDeleteCollection refuses DELETE on the collection (405), as upstream does for
	// namespaces: one request must not be able to empty the cluster.
	NoDeleteCollection bool
	// Subresources served besides the object itself.
	Subresources []string
	// Generation: metadata.generation counts spec changes.
	Generation bool
	NewFunc    func() runtime.Object
	NewList    func() runtime.Object
	// Fields returns the values field selectors may match, besides metadata.name and
	// metadata.namespace.
	Fields func(obj runtime.Object) map[string]string
	// WatchIndex is a field label (pods: spec.nodeName) by which the watch cache files
	// watches, as upstream's trigger functions: a watch whose field selector requires an
	// exact value of it is handed only events of objects that had or have that value.
	// IndexOf returns an object's value of it.
	WatchIndex string
	IndexOf    func(obj runtime.Object) string
	// Custom is the compiled CRD version of a custom resource (customresources.go); nil
	// for the built-in ones.
	Custom *crd.Version
	// StoredAs is the resource this one is a version view of (versions.go): the same
	// objects, stored in that resource's version and converted on the way in and out.
	StoredAs *Resource
}

func (r *Resource) GVK() schema.GroupVersionKind { return r.GVR.GroupVersion().WithKind(r.Kind) }

func (r *Resource) HasSub(s string) bool {
	for _, x := range r.Subresources {
		if x == s {
			return true
		}
	}
	return false
}

// HasStatus reports whether main updates keep status (and /status updates keep the rest).
func (r *Resource) HasStatus() bool { return r.HasSub("status") }

// StorageResource names the resource's etcd prefix: its plural, or <group>/<plural> for
// a custom resource (upstream's layout; every version of a CRD shares it).
func (r *Resource) StorageResource() string {
	if r.Custom != nil {
		return r.Custom.StorageResource
	}
	return r.GVR.Resource
}

// ResourceOf is the resource that serves one version of a custom resource.
func ResourceOf(v *crd.Version) *Resource {
	r := &Resource{
		GVR: v.GVR, Kind: v.Kind, Singular: v.Singular, Namespaced: v.Namespaced,
		ShortNames: v.ShortNames, Categories: v.Categories, Generation: true,
		NewFunc: v.New, NewList: v.NewList, Custom: v,
	}
	if v.Status {
		r.Subresources = append(r.Subresources, "status")
	}
	if v.Scale != nil {
		r.Subresources = append(r.Subresources, "scale")
	}
	return r
}

var allCategory = []string{"all"}

var crudVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// Verbs are the verbs discovery lists for r.
func (r *Resource) Verbs() metav1.Verbs {
	switch {
	case r.CreateOnly:
		return metav1.Verbs{"create"}
	case r.ReadOnly:
		return metav1.Verbs{"get", "list"}
	case r.NoDeleteCollection:
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

// secretFields are the field selectors upstream serves for secrets (kubectl get secrets
// --field-selector type=kubernetes.io/tls; helm lists its releases by label, not field).
func secretFields(o runtime.Object) map[string]string {
	return map[string]string{"type": string(o.(*corev1.Secret).Type)}
}

func replicaSetFields(o runtime.Object) map[string]string {
	rs := o.(*appsv1.ReplicaSet)
	return map[string]string{"status.replicas": strconv.Itoa(int(rs.Status.Replicas))}
}

// jobFields: upstream's Job field label (kubectl get jobs --field-selector status.successful=1).
func jobFields(o runtime.Object) map[string]string {
	return map[string]string{"status.successful": strconv.Itoa(int(o.(*batchv1.Job).Status.Succeeded))}
}

func NewOf[T any, PT interface {
	*T
	runtime.Object
}]() func() runtime.Object {
	return func() runtime.Object { return PT(new(T)) }
}

// resources is everything the server serves, in discovery order.
var resources = []*Resource{
	{GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", Singular: "namespace", NoDeleteCollection: true,
		ShortNames: []string{"ns"}, Subresources: []string{"status", "finalize"},
		NewFunc: NewOf[corev1.Namespace](), NewList: NewOf[corev1.NamespaceList](), Fields: namespaceFields},
	{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Singular: "pod", Namespaced: true,
		ShortNames: []string{"po"}, Categories: allCategory, Subresources: []string{"status", "binding", "log", "eviction", "proxy", "ephemeralcontainers", "exec", "attach", "portforward"},
		NewFunc: NewOf[corev1.Pod](), NewList: NewOf[corev1.PodList](), Fields: podFields,
		WatchIndex: "spec.nodeName", IndexOf: func(o runtime.Object) string { return o.(*corev1.Pod).Spec.NodeName }},
	{GVR: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node", Singular: "node",
		ShortNames: []string{"no"}, Subresources: []string{"status", "proxy"},
		NewFunc: NewOf[corev1.Node](), NewList: NewOf[corev1.NodeList](), Fields: nodeFields},
	// Events: stored as core/v1, served in events.k8s.io/v1 too (versions.go, conversion/).
	coreEvents,
	{GVR: corev1.SchemeGroupVersion.WithResource("services"), Kind: "Service", Singular: "service", Namespaced: true,
		ShortNames: []string{"svc"}, Categories: allCategory, Subresources: []string{"status", "proxy"},
		NewFunc: NewOf[corev1.Service](), NewList: NewOf[corev1.ServiceList]()},
	{GVR: corev1.SchemeGroupVersion.WithResource("endpoints"), Kind: "Endpoints", Singular: "endpoints", Namespaced: true,
		ShortNames: []string{"ep"},
		NewFunc:    NewOf[corev1.Endpoints](), NewList: NewOf[corev1.EndpointsList]()},
	{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Singular: "configmap", Namespaced: true,
		ShortNames: []string{"cm"},
		NewFunc:    NewOf[corev1.ConfigMap](), NewList: NewOf[corev1.ConfigMapList]()},
	// Secrets and ServiceAccounts (issue 14; secrets.go, serviceaccounts.go): secrets are
	// encrypted at rest (encryption/), serviceaccounts/token is the TokenRequest API.
	{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Singular: "secret", Namespaced: true,
		NewFunc: NewOf[corev1.Secret](), NewList: NewOf[corev1.SecretList](), Fields: secretFields},
	{GVR: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Kind: "ServiceAccount", Singular: "serviceaccount", Namespaced: true,
		ShortNames: []string{"sa"}, Subresources: []string{"token"},
		NewFunc: NewOf[corev1.ServiceAccount](), NewList: NewOf[corev1.ServiceAccountList]()},
	// Volumes (issue 15; volumes.go, docs/volumes.md): claims, volumes and their classes.
	{GVR: corev1.SchemeGroupVersion.WithResource("persistentvolumes"), Kind: "PersistentVolume", Singular: "persistentvolume",
		ShortNames: []string{"pv"}, Subresources: []string{"status"},
		NewFunc: NewOf[corev1.PersistentVolume](), NewList: NewOf[corev1.PersistentVolumeList]()},
	{GVR: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Kind: "PersistentVolumeClaim", Singular: "persistentvolumeclaim", Namespaced: true,
		ShortNames: []string{"pvc"}, Subresources: []string{"status"},
		NewFunc: NewOf[corev1.PersistentVolumeClaim](), NewList: NewOf[corev1.PersistentVolumeClaimList]()},
	{GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment", Singular: "deployment", Namespaced: true,
		ShortNames: []string{"deploy"}, Categories: allCategory, Subresources: []string{"status", "scale"}, Generation: true,
		NewFunc: NewOf[appsv1.Deployment](), NewList: NewOf[appsv1.DeploymentList]()},
	{GVR: appsv1.SchemeGroupVersion.WithResource("replicasets"), Kind: "ReplicaSet", Singular: "replicaset", Namespaced: true,
		ShortNames: []string{"rs"}, Categories: allCategory, Subresources: []string{"status", "scale"}, Generation: true,
		NewFunc: NewOf[appsv1.ReplicaSet](), NewList: NewOf[appsv1.ReplicaSetList](), Fields: replicaSetFields},
	// Workload controllers (issue 14): StatefulSets, DaemonSets, their ControllerRevisions,
	// Jobs and CronJobs, with upstream's short names, categories and subresources.
	{GVR: appsv1.SchemeGroupVersion.WithResource("statefulsets"), Kind: "StatefulSet", Singular: "statefulset", Namespaced: true,
		ShortNames: []string{"sts"}, Categories: allCategory, Subresources: []string{"status", "scale"}, Generation: true,
		NewFunc: NewOf[appsv1.StatefulSet](), NewList: NewOf[appsv1.StatefulSetList]()},
	{GVR: appsv1.SchemeGroupVersion.WithResource("daemonsets"), Kind: "DaemonSet", Singular: "daemonset", Namespaced: true,
		ShortNames: []string{"ds"}, Categories: allCategory, Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[appsv1.DaemonSet](), NewList: NewOf[appsv1.DaemonSetList]()},
	{GVR: appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), Kind: "ControllerRevision", Singular: "controllerrevision", Namespaced: true,
		NewFunc: NewOf[appsv1.ControllerRevision](), NewList: NewOf[appsv1.ControllerRevisionList]()},
	{GVR: batchv1.SchemeGroupVersion.WithResource("jobs"), Kind: "Job", Singular: "job", Namespaced: true,
		Categories: allCategory, Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[batchv1.Job](), NewList: NewOf[batchv1.JobList](), Fields: jobFields},
	{GVR: batchv1.SchemeGroupVersion.WithResource("cronjobs"), Kind: "CronJob", Singular: "cronjob", Namespaced: true,
		ShortNames: []string{"cj"}, Categories: allCategory, Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[batchv1.CronJob](), NewList: NewOf[batchv1.CronJobList]()},
	{GVR: storagev1.SchemeGroupVersion.WithResource("storageclasses"), Kind: "StorageClass", Singular: "storageclass",
		ShortNames: []string{"sc"},
		NewFunc:    NewOf[storagev1.StorageClass](), NewList: NewOf[storagev1.StorageClassList]()},
	// The CSI kinds upstream's scheduler and kubelet watch (devices.go).
	csiDrivers, csiNodes, csiStorageCapacities, volumeAttachments,
	// Autoscaling (issue 15; core/controller/podautoscaler, docs/controllers.md).
	// Stored in autoscaling/v2 (the preferred version), served in autoscaling/v1 too
	// (versions.go, conversion/).
	HPAV2, HPAV1,
	// The resource metrics API (metricsapi.go): kubectl top and the HPA controller read it.
	{GVR: metricsv1beta1.SchemeGroupVersion.WithResource("nodes"), Kind: "NodeMetrics", Singular: "nodemetrics", ReadOnly: true,
		NewFunc: NewOf[metricsv1beta1.NodeMetrics](), NewList: NewOf[metricsv1beta1.NodeMetricsList]()},
	{GVR: metricsv1beta1.SchemeGroupVersion.WithResource("pods"), Kind: "PodMetrics", Singular: "podmetrics", Namespaced: true, ReadOnly: true,
		NewFunc: NewOf[metricsv1beta1.PodMetrics](), NewList: NewOf[metricsv1beta1.PodMetricsList]()},
	{GVR: coordinationv1.SchemeGroupVersion.WithResource("leases"), Kind: "Lease", Singular: "lease", Namespaced: true,
		NewFunc: NewOf[coordinationv1.Lease](), NewList: NewOf[coordinationv1.LeaseList]()},
	{GVR: authenticationv1.SchemeGroupVersion.WithResource("tokenreviews"), Kind: "TokenReview", Singular: "tokenreview",
		CreateOnly: true,
		NewFunc:    NewOf[authenticationv1.TokenReview]()},
	// kubectl auth whoami and kubectl auth can-i ask these about the caller.
	{GVR: authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews"), Kind: "SelfSubjectReview", Singular: "selfsubjectreview",
		CreateOnly: true,
		NewFunc:    NewOf[authenticationv1.SelfSubjectReview]()},
	{GVR: authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews"), Kind: "SelfSubjectAccessReview", Singular: "selfsubjectaccessreview",
		CreateOnly: true,
		NewFunc:    NewOf[authorizationv1.SelfSubjectAccessReview]()},
	{GVR: authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews"), Kind: "SelfSubjectRulesReview", Singular: "selfsubjectrulesreview",
		CreateOnly: true,
		NewFunc:    NewOf[authorizationv1.SelfSubjectRulesReview]()},
	// RBAC (issue 16; rbac.go): the authorizer reads these, subjectaccessreviews ask it.
	{GVR: authorizationv1.SchemeGroupVersion.WithResource("subjectaccessreviews"), Kind: "SubjectAccessReview", Singular: "subjectaccessreview",
		CreateOnly: true, NewFunc: NewOf[authorizationv1.SubjectAccessReview]()},
	{GVR: authorizationv1.SchemeGroupVersion.WithResource("localsubjectaccessreviews"), Kind: "LocalSubjectAccessReview", Singular: "localsubjectaccessreview",
		Namespaced: true, CreateOnly: true, NewFunc: NewOf[authorizationv1.LocalSubjectAccessReview]()},
	{GVR: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), Kind: "ClusterRole", Singular: "clusterrole",
		NewFunc: NewOf[rbacv1.ClusterRole](), NewList: NewOf[rbacv1.ClusterRoleList]()},
	{GVR: rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), Kind: "ClusterRoleBinding", Singular: "clusterrolebinding",
		NewFunc: NewOf[rbacv1.ClusterRoleBinding](), NewList: NewOf[rbacv1.ClusterRoleBindingList]()},
	{GVR: rbacv1.SchemeGroupVersion.WithResource("roles"), Kind: "Role", Singular: "role", Namespaced: true,
		NewFunc: NewOf[rbacv1.Role](), NewList: NewOf[rbacv1.RoleList]()},
	{GVR: rbacv1.SchemeGroupVersion.WithResource("rolebindings"), Kind: "RoleBinding", Singular: "rolebinding", Namespaced: true,
		NewFunc: NewOf[rbacv1.RoleBinding](), NewList: NewOf[rbacv1.RoleBindingList]()},
	// CustomResourceDefinitions (issue 15; customresources.go, crd/, docs/crds.md): each
	// served version of each becomes a resource of its own at run time.
	{GVR: crd.Resource, Kind: "CustomResourceDefinition", Singular: "customresourcedefinition",
		ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"}, Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[apiextensionsv1.CustomResourceDefinition](), NewList: NewOf[apiextensionsv1.CustomResourceDefinitionList]()},
	// Policy objects and the kinds kubectl touches by default (issue 15; docs/api-objects.md):
	// disruption budgets (pods/eviction honours them), priority classes, quotas and limit
	// ranges (built-in admission), replication controllers (stored for apply --prune and
	// cluster-info dump, not reconciled), ingresses and network policies (served, not enforced).
	{GVR: policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), Kind: "PodDisruptionBudget", Singular: "poddisruptionbudget", Namespaced: true,
		ShortNames: []string{"pdb"}, Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[policyv1.PodDisruptionBudget](), NewList: NewOf[policyv1.PodDisruptionBudgetList]()},
	{GVR: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), Kind: "PriorityClass", Singular: "priorityclass",
		ShortNames: []string{"pc"},
		NewFunc:    NewOf[schedulingv1.PriorityClass](), NewList: NewOf[schedulingv1.PriorityClassList]()},
	// Gang scheduling (issue 32; docs/scheduler.md): Workloads and the PodGroups pods name
	// in spec.schedulingGroup, as upstream's scheduling.k8s.io/v1beta1.
	{GVR: schedulingv1beta1.SchemeGroupVersion.WithResource("workloads"), Kind: "Workload", Singular: "workload", Namespaced: true,
		Generation: true,
		NewFunc:    NewOf[schedulingv1beta1.Workload](), NewList: NewOf[schedulingv1beta1.WorkloadList]()},
	{GVR: schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups"), Kind: "PodGroup", Singular: "podgroup", Namespaced: true,
		Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[schedulingv1beta1.PodGroup](), NewList: NewOf[schedulingv1beta1.PodGroupList]()},
	{GVR: corev1.SchemeGroupVersion.WithResource("resourcequotas"), Kind: "ResourceQuota", Singular: "resourcequota", Namespaced: true,
		ShortNames: []string{"quota"}, Subresources: []string{"status"},
		NewFunc: NewOf[corev1.ResourceQuota](), NewList: NewOf[corev1.ResourceQuotaList]()},
	{GVR: corev1.SchemeGroupVersion.WithResource("limitranges"), Kind: "LimitRange", Singular: "limitrange", Namespaced: true,
		ShortNames: []string{"limits"},
		NewFunc:    NewOf[corev1.LimitRange](), NewList: NewOf[corev1.LimitRangeList]()},
	{GVR: corev1.SchemeGroupVersion.WithResource("replicationcontrollers"), Kind: "ReplicationController", Singular: "replicationcontroller", Namespaced: true,
		ShortNames: []string{"rc"}, Categories: allCategory, Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[corev1.ReplicationController](), NewList: NewOf[corev1.ReplicationControllerList]()},
	{GVR: networkingv1.SchemeGroupVersion.WithResource("ingresses"), Kind: "Ingress", Singular: "ingress", Namespaced: true,
		ShortNames: []string{"ing"}, Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[networkingv1.Ingress](), NewList: NewOf[networkingv1.IngressList]()},
	{GVR: networkingv1.SchemeGroupVersion.WithResource("ingressclasses"), Kind: "IngressClass", Singular: "ingressclass",
		NewFunc: NewOf[networkingv1.IngressClass](), NewList: NewOf[networkingv1.IngressClassList]()},
	{GVR: networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), Kind: "NetworkPolicy", Singular: "networkpolicy", Namespaced: true,
		ShortNames: []string{"netpol"}, Generation: true,
		NewFunc: NewOf[networkingv1.NetworkPolicy](), NewList: NewOf[networkingv1.NetworkPolicyList]()},
	{GVR: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), Kind: "EndpointSlice", Singular: "endpointslice", Namespaced: true,
		NewFunc: NewOf[discoveryv1.EndpointSlice](), NewList: NewOf[discoveryv1.EndpointSliceList]()},
	eventsV1,
	// Dynamic resource allocation, resource.k8s.io/v1 (devices.go).
	deviceClasses, resourceClaims, resourceClaimTemplates, resourceSlices, deviceTaintRules,
	// Admission webhooks and CEL admission policies (issue 29; admission/webhook,
	// admission/celpolicy, docs/admission.md).
	{GVR: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"), Kind: "MutatingWebhookConfiguration",
		Singular: "mutatingwebhookconfiguration", Categories: []string{"api-extensions"}, Generation: true,
		NewFunc: NewOf[admissionregistrationv1.MutatingWebhookConfiguration](), NewList: NewOf[admissionregistrationv1.MutatingWebhookConfigurationList]()},
	{GVR: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), Kind: "ValidatingWebhookConfiguration",
		Singular: "validatingwebhookconfiguration", Categories: []string{"api-extensions"}, Generation: true,
		NewFunc: NewOf[admissionregistrationv1.ValidatingWebhookConfiguration](), NewList: NewOf[admissionregistrationv1.ValidatingWebhookConfigurationList]()},
	{GVR: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"), Kind: "ValidatingAdmissionPolicy",
		Singular: "validatingadmissionpolicy", Categories: []string{"api-extensions"}, Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[admissionregistrationv1.ValidatingAdmissionPolicy](), NewList: NewOf[admissionregistrationv1.ValidatingAdmissionPolicyList]()},
	{GVR: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings"), Kind: "ValidatingAdmissionPolicyBinding",
		Singular: "validatingadmissionpolicybinding", Categories: []string{"api-extensions"}, Generation: true,
		NewFunc: NewOf[admissionregistrationv1.ValidatingAdmissionPolicyBinding](), NewList: NewOf[admissionregistrationv1.ValidatingAdmissionPolicyBindingList]()},
	{GVR: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies"), Kind: "MutatingAdmissionPolicy",
		Singular: "mutatingadmissionpolicy", Categories: []string{"api-extensions"}, Generation: true,
		NewFunc: NewOf[admissionregistrationv1.MutatingAdmissionPolicy](), NewList: NewOf[admissionregistrationv1.MutatingAdmissionPolicyList]()},
	{GVR: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings"), Kind: "MutatingAdmissionPolicyBinding",
		Singular: "mutatingadmissionpolicybinding", Categories: []string{"api-extensions"}, Generation: true,
		NewFunc: NewOf[admissionregistrationv1.MutatingAdmissionPolicyBinding](), NewList: NewOf[admissionregistrationv1.MutatingAdmissionPolicyBindingList]()},
	// wasmkube's own policy objects (issue 27; core/apis/policy/v1alpha1, docs/api-objects.md).
	{GVR: policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicies"), Kind: "WasmPolicy", Singular: "wasmpolicy",
		ShortNames: []string{"wp"}, Categories: []string{"wasmkube"}, Subresources: []string{"status"}, Generation: true,
		NewFunc: NewOf[policyv1alpha1.WasmPolicy](), NewList: NewOf[policyv1alpha1.WasmPolicyList]()},
	// One component's report on one policy (plugins/wasmpolicy/report; docs/wasmpolicy-status.md).
	{GVR: policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicyreports"), Kind: "WasmPolicyReport", Singular: "wasmpolicyreport",
		ShortNames: []string{"wpr"}, Categories: []string{"wasmkube"},
		NewFunc: NewOf[policyv1alpha1.WasmPolicyReport](), NewList: NewOf[policyv1alpha1.WasmPolicyReportList]()},
}

// Builtin is the static table: every built-in resource in discovery order.
func Builtin() []*Resource { return resources }

// Table finds resources by group, version and plural name.
type Table map[schema.GroupVersionResource]*Resource

func NewTable() Table {
	r := Table{}
	for _, res := range resources {
		r[res.GVR] = res
	}
	return r
}

// groupVersions lists served group versions in discovery order; the core group first.
func groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		gv := r.GVR.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}

// FieldOf returns the struct field name (Spec, Status) of obj, or an invalid Value.
func FieldOf(obj runtime.Object, name string) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName(name)
}
