package printers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Upstream's columns (pkg/printers/internalversion) for PodDisruptionBudgets,
// PriorityClasses, ResourceQuotas, LimitRanges, ReplicationControllers, Ingresses,
// IngressClasses and NetworkPolicies.

var (
	pdbColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Min Available", Type: "string", Description: "The minimum number of pods that must be available."},
		{Name: "Max Unavailable", Type: "string", Description: "The maximum number of pods that may be unavailable."},
		{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time."},
		ageColumn,
	}
	priorityClassColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Value", Type: "integer", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["value"]},
		{Name: "Global-Default", Type: "boolean", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]},
		ageColumn,
		{Name: "PreemptionPolicy", Type: "string", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]},
	}
	resourceQuotaColumns = []metav1.TableColumnDefinition{
		nameColumn,
		ageColumn,
		{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
		{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
	}
	limitRangeColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
	}
	rcColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Desired", Type: "integer", Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]},
		ageColumn, containersColumn, imagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]},
	}
	ingressColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for additional configuration"},
		{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
		{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
		{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
		ageColumn,
	}
	ingressClassColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
		{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
		ageColumn,
	}
	networkPolicyColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Pod-Selector", Type: "string", Description: networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]},
		ageColumn,
	}
)

func printPDB(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	p, ok := obj.(*policyv1.PodDisruptionBudget)
	if !ok {
		return nil, nil, false
	}
	minA, maxU := "N/A", "N/A"
	if p.Spec.MinAvailable != nil {
		minA = p.Spec.MinAvailable.String()
	}
	if p.Spec.MaxUnavailable != nil {
		maxU = p.Spec.MaxUnavailable.String()
	}
	return []any{p.Name, minA, maxU, int64(p.Status.DisruptionsAllowed), age(p.CreationTimestamp, now)}, nil, true
}

func printPriorityClass(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	pc, ok := obj.(*schedulingv1.PriorityClass)
	if !ok {
		return nil, nil, false
	}
	pp := "<unset>"
	if pc.PreemptionPolicy != nil {
		pp = string(*pc.PreemptionPolicy)
	}
	return []any{pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp, now), pp}, nil, true
}

// quotaCells is upstream's "requests.cpu: 0/1, ..." split into request and limit columns.
func quotaCells(q *corev1.ResourceQuota) (string, string) {
	names := make([]string, 0, len(q.Status.Hard))
	for k := range q.Status.Hard {
		names = append(names, string(k))
	}
	if len(names) == 0 {
		for k := range q.Spec.Hard {
			names = append(names, string(k))
		}
	}
	sort.Strings(names)
	var req, lim []string
	for _, n := range names {
		hard, ok := q.Status.Hard[corev1.ResourceName(n)]
		if !ok {
			hard = q.Spec.Hard[corev1.ResourceName(n)]
		}
		used := q.Status.Used[corev1.ResourceName(n)]
		cell := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
		if strings.HasPrefix(n, "limits.") {
			lim = append(lim, cell)
		} else {
			req = append(req, cell)
		}
	}
	return strings.Join(req, ", "), strings.Join(lim, ", ")
}

func printResourceQuota(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return nil, nil, false
	}
	req, lim := quotaCells(q)
	return []any{q.Name, age(q.CreationTimestamp, now), req, lim}, nil, true
}

func printLimitRange(obj runtime.Object, _ time.Time) ([]any, []metav1.TableRowCondition, bool) {
	lr, ok := obj.(*corev1.LimitRange)
	if !ok {
		return nil, nil, false
	}
	return []any{lr.Name, lr.CreationTimestamp.UTC().Format(time.RFC3339)}, nil, true
}

func printRC(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	rc, ok := obj.(*corev1.ReplicationController)
	if !ok {
		return nil, nil, false
	}
	var names, images string
	if rc.Spec.Template != nil {
		names, images = containerCells(rc.Spec.Template.Spec.Containers)
	}
	sel := labels.FormatLabels(rc.Spec.Selector)
	return []any{rc.Name, replicas(rc.Spec.Replicas), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
		age(rc.CreationTimestamp, now), names, images, sel}, nil, true
}

func printIngress(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok {
		return nil, nil, false
	}
	class := "<none>"
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	var hosts []string
	for _, r := range ing.Spec.Rules {
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	hostCell := "*"
	if len(hosts) > 0 {
		hostCell = strings.Join(hosts, ",")
	}
	var addrs []string
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			addrs = append(addrs, lb.IP)
		} else if lb.Hostname != "" {
			addrs = append(addrs, lb.Hostname)
		}
	}
	ports := "80"
	if len(ing.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return []any{ing.Name, class, hostCell, strings.Join(addrs, ","), ports, age(ing.CreationTimestamp, now)}, nil, true
}

func printIngressClass(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	ic, ok := obj.(*networkingv1.IngressClass)
	if !ok {
		return nil, nil, false
	}
	params := "<none>"
	if p := ic.Spec.Parameters; p != nil {
		params = p.Kind
		if p.APIGroup != nil {
			params += "." + *p.APIGroup
		}
		params += "/" + p.Name
	}
	return []any{ic.Name, ic.Spec.Controller, params, age(ic.CreationTimestamp, now)}, nil, true
}

func printNetworkPolicy(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	np, ok := obj.(*networkingv1.NetworkPolicy)
	if !ok {
		return nil, nil, false
	}
	return []any{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), age(np.CreationTimestamp, now)}, nil, true
}

func init() {
	register(policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), pdbColumns, printPDB)
	register(schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), priorityClassColumns, printPriorityClass)
	register(corev1.SchemeGroupVersion.WithKind("ResourceQuota"), resourceQuotaColumns, printResourceQuota)
	register(corev1.SchemeGroupVersion.WithKind("LimitRange"), limitRangeColumns, printLimitRange)
	register(corev1.SchemeGroupVersion.WithKind("ReplicationController"), rcColumns, printRC)
	register(networkingv1.SchemeGroupVersion.WithKind("Ingress"), ingressColumns, printIngress)
	register(networkingv1.SchemeGroupVersion.WithKind("IngressClass"), ingressClassColumns, printIngressClass)
	register(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), networkPolicyColumns, printNetworkPolicy)
}
