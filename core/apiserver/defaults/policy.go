package defaults

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// policy sets upstream's defaults of PriorityClass (preemptionPolicy), LimitRange
// (container defaults from max and min), ReplicationController (replicas, selector and
// labels from the template) and NetworkPolicy (policyTypes, port protocol). It reports
// whether obj is one of those kinds.
func policy(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *schedulingv1.PriorityClass:
		if o.PreemptionPolicy == nil {
			p := corev1.PreemptLowerPriority
			o.PreemptionPolicy = &p
		}
	case *corev1.LimitRange:
		for i := range o.Spec.Limits {
			limitRangeItem(&o.Spec.Limits[i])
		}
	case *corev1.ReplicationController:
		replicationController(o)
	case *networkingv1.NetworkPolicy:
		networkPolicy(o)
	default:
		return false
	}
	return true
}

// limitRangeItem is upstream's SetDefaults_LimitRangeItem: for containers, a missing
// default limit is the max, a missing default request the default limit, else the min.
func limitRangeItem(item *corev1.LimitRangeItem) {
	if item.Type != corev1.LimitTypeContainer {
		return
	}
	if item.Default == nil {
		item.Default = corev1.ResourceList{}
	}
	if item.DefaultRequest == nil {
		item.DefaultRequest = corev1.ResourceList{}
	}
	for k, v := range item.Max {
		if _, ok := item.Default[k]; !ok {
			item.Default[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Default {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Min {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
}

func replicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Replicas == nil {
		one := int32(1)
		rc.Spec.Replicas = &one
	}
	if t := rc.Spec.Template; t != nil {
		if len(rc.Spec.Selector) == 0 && len(t.Labels) > 0 {
			rc.Spec.Selector = map[string]string{}
			for k, v := range t.Labels {
				rc.Spec.Selector[k] = v
			}
		}
		if len(rc.Labels) == 0 && len(t.Labels) > 0 {
			rc.Labels = map[string]string{}
			for k, v := range t.Labels {
				rc.Labels[k] = v
			}
		}
		podTemplateSpec(t)
	}
}

func networkPolicy(np *networkingv1.NetworkPolicy) {
	tcp := corev1.ProtocolTCP
	ports := func(ps []networkingv1.NetworkPolicyPort) {
		for i := range ps {
			if ps[i].Protocol == nil {
				p := tcp
				ps[i].Protocol = &p
			}
		}
	}
	for i := range np.Spec.Ingress {
		ports(np.Spec.Ingress[i].Ports)
	}
	for i := range np.Spec.Egress {
		ports(np.Spec.Egress[i].Ports)
	}
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) > 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}
