package openapi

import (
	"reflect"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// resource is one REST resource the API server serves, as far as the OpenAPI document needs.
type resource struct {
	gv         schema.GroupVersion
	plural     string
	kind       string
	namespaced bool
	// noDeleteCollection: DELETE on the collection is not served (namespaces).
	noDeleteCollection bool
	obj, list          any
	subresources       []subresource
}

type subresource struct {
	name  string
	kind  schema.GroupVersionKind // the kind of the subresource's body
	obj   any
	verbs []string // get, put, patch, post
}

var (
	scaleGVK   = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	bindingGVK = corev1.SchemeGroupVersion.WithKind("Binding")
)

func statusOf(gvk schema.GroupVersionKind, obj any) subresource {
	return subresource{name: "status", kind: gvk, obj: obj, verbs: []string{"get", "put", "patch"}}
}

func scaleSub() subresource {
	return subresource{name: "scale", kind: scaleGVK, obj: &autoscalingv1.Scale{}, verbs: []string{"get", "put", "patch"}}
}

// resources lists what wasmkube serves. Documents, hashes and paths all derive from it.
var resources = []resource{
	{gv: corev1.SchemeGroupVersion, plural: "namespaces", kind: "Namespace", noDeleteCollection: true, obj: &corev1.Namespace{}, list: &corev1.NamespaceList{},
		subresources: []subresource{
			statusOf(corev1.SchemeGroupVersion.WithKind("Namespace"), &corev1.Namespace{}),
			{name: "finalize", kind: corev1.SchemeGroupVersion.WithKind("Namespace"), obj: &corev1.Namespace{}, verbs: []string{"put"}},
		}},
	{gv: corev1.SchemeGroupVersion, plural: "nodes", kind: "Node", obj: &corev1.Node{}, list: &corev1.NodeList{},
		subresources: []subresource{statusOf(corev1.SchemeGroupVersion.WithKind("Node"), &corev1.Node{})}},
	{gv: corev1.SchemeGroupVersion, plural: "pods", kind: "Pod", namespaced: true, obj: &corev1.Pod{}, list: &corev1.PodList{},
		subresources: []subresource{
			statusOf(corev1.SchemeGroupVersion.WithKind("Pod"), &corev1.Pod{}),
			{name: "binding", kind: bindingGVK, obj: &corev1.Binding{}, verbs: []string{"post"}},
			{name: "eviction", kind: policyv1.SchemeGroupVersion.WithKind("Eviction"), obj: &policyv1.Eviction{}, verbs: []string{"post"}},
		}},
	{gv: corev1.SchemeGroupVersion, plural: "events", kind: "Event", namespaced: true, obj: &corev1.Event{}, list: &corev1.EventList{}},
	{gv: corev1.SchemeGroupVersion, plural: "services", kind: "Service", namespaced: true, obj: &corev1.Service{}, list: &corev1.ServiceList{},
		subresources: []subresource{statusOf(corev1.SchemeGroupVersion.WithKind("Service"), &corev1.Service{})}},
	{gv: corev1.SchemeGroupVersion, plural: "endpoints", kind: "Endpoints", namespaced: true, obj: &corev1.Endpoints{}, list: &corev1.EndpointsList{}},
	{gv: corev1.SchemeGroupVersion, plural: "configmaps", kind: "ConfigMap", namespaced: true, obj: &corev1.ConfigMap{}, list: &corev1.ConfigMapList{}},
	{gv: corev1.SchemeGroupVersion, plural: "secrets", kind: "Secret", namespaced: true, obj: &corev1.Secret{}, list: &corev1.SecretList{}},
	{gv: corev1.SchemeGroupVersion, plural: "serviceaccounts", kind: "ServiceAccount", namespaced: true, obj: &corev1.ServiceAccount{}, list: &corev1.ServiceAccountList{},
		subresources: []subresource{{name: "token", kind: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), obj: &authenticationv1.TokenRequest{}, verbs: []string{"post"}}}},
	{gv: corev1.SchemeGroupVersion, plural: "persistentvolumes", kind: "PersistentVolume", obj: &corev1.PersistentVolume{}, list: &corev1.PersistentVolumeList{},
		subresources: []subresource{statusOf(corev1.SchemeGroupVersion.WithKind("PersistentVolume"), &corev1.PersistentVolume{})}},
	{gv: corev1.SchemeGroupVersion, plural: "persistentvolumeclaims", kind: "PersistentVolumeClaim", namespaced: true, obj: &corev1.PersistentVolumeClaim{}, list: &corev1.PersistentVolumeClaimList{},
		subresources: []subresource{statusOf(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), &corev1.PersistentVolumeClaim{})}},
	{gv: storagev1.SchemeGroupVersion, plural: "storageclasses", kind: "StorageClass", obj: &storagev1.StorageClass{}, list: &storagev1.StorageClassList{}},
	// The CSI and dynamic resource allocation kinds upstream components watch (issue 28).
	{gv: storagev1.SchemeGroupVersion, plural: "csidrivers", kind: "CSIDriver", obj: &storagev1.CSIDriver{}, list: &storagev1.CSIDriverList{}},
	{gv: storagev1.SchemeGroupVersion, plural: "csinodes", kind: "CSINode", obj: &storagev1.CSINode{}, list: &storagev1.CSINodeList{}},
	{gv: storagev1.SchemeGroupVersion, plural: "csistoragecapacities", kind: "CSIStorageCapacity", namespaced: true, obj: &storagev1.CSIStorageCapacity{}, list: &storagev1.CSIStorageCapacityList{}},
	{gv: storagev1.SchemeGroupVersion, plural: "volumeattachments", kind: "VolumeAttachment", obj: &storagev1.VolumeAttachment{}, list: &storagev1.VolumeAttachmentList{},
		subresources: []subresource{statusOf(storagev1.SchemeGroupVersion.WithKind("VolumeAttachment"), &storagev1.VolumeAttachment{})}},
	{gv: resourcev1.SchemeGroupVersion, plural: "deviceclasses", kind: "DeviceClass", obj: &resourcev1.DeviceClass{}, list: &resourcev1.DeviceClassList{}},
	{gv: resourcev1.SchemeGroupVersion, plural: "resourceclaims", kind: "ResourceClaim", namespaced: true, obj: &resourcev1.ResourceClaim{}, list: &resourcev1.ResourceClaimList{},
		subresources: []subresource{statusOf(resourcev1.SchemeGroupVersion.WithKind("ResourceClaim"), &resourcev1.ResourceClaim{})}},
	{gv: resourcev1.SchemeGroupVersion, plural: "resourceclaimtemplates", kind: "ResourceClaimTemplate", namespaced: true, obj: &resourcev1.ResourceClaimTemplate{}, list: &resourcev1.ResourceClaimTemplateList{}},
	{gv: resourcev1.SchemeGroupVersion, plural: "resourceslices", kind: "ResourceSlice", obj: &resourcev1.ResourceSlice{}, list: &resourcev1.ResourceSliceList{}},
	{gv: resourcev1.SchemeGroupVersion, plural: "devicetaintrules", kind: "DeviceTaintRule", obj: &resourcev1.DeviceTaintRule{}, list: &resourcev1.DeviceTaintRuleList{},
		subresources: []subresource{statusOf(resourcev1.SchemeGroupVersion.WithKind("DeviceTaintRule"), &resourcev1.DeviceTaintRule{})}},
	{gv: coordinationv1.SchemeGroupVersion, plural: "leases", kind: "Lease", namespaced: true, obj: &coordinationv1.Lease{}, list: &coordinationv1.LeaseList{}},
	{gv: appsv1.SchemeGroupVersion, plural: "deployments", kind: "Deployment", namespaced: true, obj: &appsv1.Deployment{}, list: &appsv1.DeploymentList{},
		subresources: []subresource{statusOf(appsv1.SchemeGroupVersion.WithKind("Deployment"), &appsv1.Deployment{}), scaleSub()}},
	{gv: appsv1.SchemeGroupVersion, plural: "replicasets", kind: "ReplicaSet", namespaced: true, obj: &appsv1.ReplicaSet{}, list: &appsv1.ReplicaSetList{},
		subresources: []subresource{statusOf(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), &appsv1.ReplicaSet{}), scaleSub()}},
	{gv: appsv1.SchemeGroupVersion, plural: "statefulsets", kind: "StatefulSet", namespaced: true, obj: &appsv1.StatefulSet{}, list: &appsv1.StatefulSetList{},
		subresources: []subresource{statusOf(appsv1.SchemeGroupVersion.WithKind("StatefulSet"), &appsv1.StatefulSet{}), scaleSub()}},
	{gv: appsv1.SchemeGroupVersion, plural: "daemonsets", kind: "DaemonSet", namespaced: true, obj: &appsv1.DaemonSet{}, list: &appsv1.DaemonSetList{},
		subresources: []subresource{statusOf(appsv1.SchemeGroupVersion.WithKind("DaemonSet"), &appsv1.DaemonSet{})}},
	{gv: appsv1.SchemeGroupVersion, plural: "controllerrevisions", kind: "ControllerRevision", namespaced: true, obj: &appsv1.ControllerRevision{}, list: &appsv1.ControllerRevisionList{}},
	{gv: batchv1.SchemeGroupVersion, plural: "jobs", kind: "Job", namespaced: true, obj: &batchv1.Job{}, list: &batchv1.JobList{},
		subresources: []subresource{statusOf(batchv1.SchemeGroupVersion.WithKind("Job"), &batchv1.Job{})}},
	{gv: batchv1.SchemeGroupVersion, plural: "cronjobs", kind: "CronJob", namespaced: true, obj: &batchv1.CronJob{}, list: &batchv1.CronJobList{},
		subresources: []subresource{statusOf(batchv1.SchemeGroupVersion.WithKind("CronJob"), &batchv1.CronJob{})}},
	// RBAC (issue 16).
	{gv: rbacv1.SchemeGroupVersion, plural: "clusterroles", kind: "ClusterRole", obj: &rbacv1.ClusterRole{}, list: &rbacv1.ClusterRoleList{}},
	{gv: rbacv1.SchemeGroupVersion, plural: "clusterrolebindings", kind: "ClusterRoleBinding", obj: &rbacv1.ClusterRoleBinding{}, list: &rbacv1.ClusterRoleBindingList{}},
	{gv: rbacv1.SchemeGroupVersion, plural: "roles", kind: "Role", namespaced: true, obj: &rbacv1.Role{}, list: &rbacv1.RoleList{}},
	{gv: rbacv1.SchemeGroupVersion, plural: "rolebindings", kind: "RoleBinding", namespaced: true, obj: &rbacv1.RoleBinding{}, list: &rbacv1.RoleBindingList{}},
	// Policy objects, replication controllers, ingresses and network policies (issue 15).
	{gv: policyv1.SchemeGroupVersion, plural: "poddisruptionbudgets", kind: "PodDisruptionBudget", namespaced: true, obj: &policyv1.PodDisruptionBudget{}, list: &policyv1.PodDisruptionBudgetList{},
		subresources: []subresource{statusOf(policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), &policyv1.PodDisruptionBudget{})}},
	{gv: schedulingv1.SchemeGroupVersion, plural: "priorityclasses", kind: "PriorityClass", obj: &schedulingv1.PriorityClass{}, list: &schedulingv1.PriorityClassList{}},
	{gv: schedulingv1beta1.SchemeGroupVersion, plural: "workloads", kind: "Workload", namespaced: true, obj: &schedulingv1beta1.Workload{}, list: &schedulingv1beta1.WorkloadList{}},
	{gv: schedulingv1beta1.SchemeGroupVersion, plural: "podgroups", kind: "PodGroup", namespaced: true, obj: &schedulingv1beta1.PodGroup{}, list: &schedulingv1beta1.PodGroupList{},
		subresources: []subresource{statusOf(schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"), &schedulingv1beta1.PodGroup{})}},
	{gv: corev1.SchemeGroupVersion, plural: "resourcequotas", kind: "ResourceQuota", namespaced: true, obj: &corev1.ResourceQuota{}, list: &corev1.ResourceQuotaList{},
		subresources: []subresource{statusOf(corev1.SchemeGroupVersion.WithKind("ResourceQuota"), &corev1.ResourceQuota{})}},
	{gv: corev1.SchemeGroupVersion, plural: "limitranges", kind: "LimitRange", namespaced: true, obj: &corev1.LimitRange{}, list: &corev1.LimitRangeList{}},
	{gv: corev1.SchemeGroupVersion, plural: "replicationcontrollers", kind: "ReplicationController", namespaced: true, obj: &corev1.ReplicationController{}, list: &corev1.ReplicationControllerList{},
		subresources: []subresource{statusOf(corev1.SchemeGroupVersion.WithKind("ReplicationController"), &corev1.ReplicationController{})}},
	{gv: networkingv1.SchemeGroupVersion, plural: "ingresses", kind: "Ingress", namespaced: true, obj: &networkingv1.Ingress{}, list: &networkingv1.IngressList{},
		subresources: []subresource{statusOf(networkingv1.SchemeGroupVersion.WithKind("Ingress"), &networkingv1.Ingress{})}},
	{gv: networkingv1.SchemeGroupVersion, plural: "ingressclasses", kind: "IngressClass", obj: &networkingv1.IngressClass{}, list: &networkingv1.IngressClassList{}},
	{gv: networkingv1.SchemeGroupVersion, plural: "networkpolicies", kind: "NetworkPolicy", namespaced: true, obj: &networkingv1.NetworkPolicy{}, list: &networkingv1.NetworkPolicyList{}},
	{gv: discoveryv1.SchemeGroupVersion, plural: "endpointslices", kind: "EndpointSlice", namespaced: true, obj: &discoveryv1.EndpointSlice{}, list: &discoveryv1.EndpointSliceList{}},
	{gv: eventsv1.SchemeGroupVersion, plural: "events", kind: "Event", namespaced: true, obj: &eventsv1.Event{}, list: &eventsv1.EventList{}},
	// Admission webhooks and CEL admission policies (issue 29).
	{gv: admissionregistrationv1.SchemeGroupVersion, plural: "mutatingwebhookconfigurations", kind: "MutatingWebhookConfiguration",
		obj: &admissionregistrationv1.MutatingWebhookConfiguration{}, list: &admissionregistrationv1.MutatingWebhookConfigurationList{}},
	{gv: admissionregistrationv1.SchemeGroupVersion, plural: "validatingwebhookconfigurations", kind: "ValidatingWebhookConfiguration",
		obj: &admissionregistrationv1.ValidatingWebhookConfiguration{}, list: &admissionregistrationv1.ValidatingWebhookConfigurationList{}},
	{gv: admissionregistrationv1.SchemeGroupVersion, plural: "validatingadmissionpolicies", kind: "ValidatingAdmissionPolicy",
		obj: &admissionregistrationv1.ValidatingAdmissionPolicy{}, list: &admissionregistrationv1.ValidatingAdmissionPolicyList{},
		subresources: []subresource{statusOf(admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"), &admissionregistrationv1.ValidatingAdmissionPolicy{})}},
	{gv: admissionregistrationv1.SchemeGroupVersion, plural: "validatingadmissionpolicybindings", kind: "ValidatingAdmissionPolicyBinding",
		obj: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, list: &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}},
	{gv: admissionregistrationv1.SchemeGroupVersion, plural: "mutatingadmissionpolicies", kind: "MutatingAdmissionPolicy",
		obj: &admissionregistrationv1.MutatingAdmissionPolicy{}, list: &admissionregistrationv1.MutatingAdmissionPolicyList{}},
	{gv: admissionregistrationv1.SchemeGroupVersion, plural: "mutatingadmissionpolicybindings", kind: "MutatingAdmissionPolicyBinding",
		obj: &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, list: &admissionregistrationv1.MutatingAdmissionPolicyBindingList{}},
	// wasmkube's own (issue 27).
	{gv: policyv1alpha1.SchemeGroupVersion, plural: "wasmpolicies", kind: "WasmPolicy", obj: &policyv1alpha1.WasmPolicy{}, list: &policyv1alpha1.WasmPolicyList{},
		subresources: []subresource{statusOf(policyv1alpha1.SchemeGroupVersion.WithKind("WasmPolicy"), &policyv1alpha1.WasmPolicy{})}},
	{gv: policyv1alpha1.SchemeGroupVersion, plural: "wasmpolicyreports", kind: "WasmPolicyReport", obj: &policyv1alpha1.WasmPolicyReport{}, list: &policyv1alpha1.WasmPolicyReportList{}},
}

// groupVersions are the documents served under /openapi/v3, in a stable order. autoscaling/v1
// has no resources of its own here but owns the Scale kind of the scale subresources.
var groupVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion, autoscalingv1.SchemeGroupVersion, batchv1.SchemeGroupVersion, coordinationv1.SchemeGroupVersion,
	rbacv1.SchemeGroupVersion, policyv1.SchemeGroupVersion, schedulingv1.SchemeGroupVersion, networkingv1.SchemeGroupVersion, storagev1.SchemeGroupVersion,
	admissionregistrationv1.SchemeGroupVersion, schedulingv1beta1.SchemeGroupVersion, resourcev1.SchemeGroupVersion,
	policyv1alpha1.SchemeGroupVersion,
}

// gvPath is the document key of a group version: api/v1, apis/apps/v1.
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

func elem(v any) reflect.Type {
	return reflect.TypeOf(v).Elem()
}

// kindTypes maps each Go type that is a top-level kind to its group-version-kinds, the
// x-kubernetes-group-version-kind extension kubectl matches on.
func kindTypes() map[reflect.Type][]schema.GroupVersionKind {
	m := map[reflect.Type][]schema.GroupVersionKind{}
	add := func(v any, gvk schema.GroupVersionKind) {
		t := elem(v)
		for _, have := range m[t] {
			if have == gvk {
				return
			}
		}
		m[t] = append(m[t], gvk)
	}
	for _, r := range resources {
		add(r.obj, r.gv.WithKind(r.kind))
		add(r.list, r.gv.WithKind(r.kind+"List"))
		for _, s := range r.subresources {
			add(s.obj, s.kind)
		}
	}
	for _, gv := range groupVersions {
		add(&metav1.Status{}, gv.WithKind("Status"))
		add(&metav1.DeleteOptions{}, gv.WithKind("DeleteOptions"))
		add(&metav1.WatchEvent{}, gv.WithKind("WatchEvent"))
	}
	return m
}

// opGroup is the group part of upstream's operation ids and tags: CoreV1, AppsV1, ...
func opGroup(gv schema.GroupVersion) (id, tag string) {
	g := gv.Group
	if g == "" {
		g = "core"
	}
	g = strings.TrimSuffix(g, ".k8s.io")
	var b strings.Builder
	for _, part := range strings.Split(g, ".") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	v := gv.Version
	return b.String() + strings.ToUpper(v[:1]) + v[1:], strings.ReplaceAll(g, ".", "_") + "_" + v
}
