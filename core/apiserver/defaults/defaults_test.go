package defaults

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestPodDefaults(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx",
				Ports:         []corev1.ContainerPort{{ContainerPort: 80}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
				Resources:     corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
			}},
			Volumes: []corev1.Volume{{Name: "v"}, {Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}},
		},
	}
	Default(pod)
	s := pod.Spec
	c := s.Containers[0]
	if s.Priority != nil || s.PreemptionPolicy != nil {
		t.Errorf("priority %v, preemptionPolicy %v: the Priority admission plugin sets them, not defaulting", s.Priority, s.PreemptionPolicy)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways},
		{"dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst},
		{"terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"securityContext", *s.SecurityContext, corev1.PodSecurityContext{}},
		{"enableServiceLinks", *s.EnableServiceLinks, true},
		{"imagePullPolicy", c.ImagePullPolicy, corev1.PullAlways},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP},
		{"probe timeout", c.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe period", c.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe success", c.LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failure", c.LivenessProbe.FailureThreshold, int32(3)},
		{"httpGet path", c.LivenessProbe.HTTPGet.Path, "/"},
		{"httpGet scheme", c.LivenessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP},
		{"memory request from limit", c.Resources.Requests.Memory().String(), "64Mi"},
		{"empty volume is emptyDir", s.Volumes[0].EmptyDir != nil, true},
		{"configMap defaultMode", *s.Volumes[1].ConfigMap.DefaultMode, int32(0644)},
	}
	for _, ch := range checks {
		if !equality.Semantic.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}

	again := pod.DeepCopy()
	Default(again)
	if !equality.Semantic.DeepEqual(pod, again) {
		t.Errorf("Default is not idempotent")
	}

	set := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To(int64(5)),
		Containers: []corev1.Container{{Name: "a", Image: "busybox", ImagePullPolicy: corev1.PullNever}}}}
	Default(set)
	if set.Spec.RestartPolicy != corev1.RestartPolicyNever || *set.Spec.TerminationGracePeriodSeconds != 5 || set.Spec.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("Default overwrote fields the user set: %+v", set.Spec)
	}
}

func TestPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"localhost:5000/busybox", corev1.PullAlways},
		{"localhost:5000/busybox:1.36", corev1.PullIfNotPresent},
		{"registry.example.com/app@sha256:abcd", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		if got := pullPolicy(tt.image); got != tt.want {
			t.Errorf("pullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
		}
	}
}

func TestWorkloadDefaults(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "nginx:1"}}}}}}
	Default(d)
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		d.Spec.Strategy.RollingUpdate.MaxSurge.String() != "25%" || d.Spec.Strategy.RollingUpdate.MaxUnavailable.String() != "25%" ||
		*d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("deployment defaults wrong: %+v", d.Spec)
	}
	if d.Spec.Template.Spec.EnableServiceLinks != nil {
		t.Errorf("template got enableServiceLinks; upstream sets it on pods only")
	}
	if d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || d.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("template not defaulted: %+v", d.Spec.Template.Spec)
	}
	recreate := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	Default(recreate)
	if recreate.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("Recreate got a rollingUpdate")
	}

	rs := &appsv1.ReplicaSet{}
	Default(rs)
	if *rs.Spec.Replicas != 1 || rs.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("replicaset defaults wrong: %+v", rs.Spec)
	}
}

func TestServiceNamespaceNodeDefaults(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}, {Port: 443, TargetPort: intstr.FromString("https")}}}}
	Default(svc)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.SessionAffinity != corev1.ServiceAffinityNone ||
		svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP || svc.Spec.Ports[0].TargetPort != intstr.FromInt32(80) ||
		svc.Spec.Ports[1].TargetPort != intstr.FromString("https") || *svc.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster {
		t.Errorf("service defaults wrong: %+v", svc.Spec)
	}

	if *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || len(svc.Spec.IPFamilies) != 1 || svc.Spec.IPFamilies[0] != corev1.IPv4Protocol {
		t.Errorf("service IP families wrong: %v %v", svc.Spec.IPFamilyPolicy, svc.Spec.IPFamilies)
	}
	headless := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
	Default(headless)
	if *headless.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack {
		t.Errorf("selectorless headless service policy = %v, want RequireDualStack", *headless.Spec.IPFamilyPolicy)
	}
	external := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	Default(external)
	if external.Spec.IPFamilyPolicy != nil || external.Spec.IPFamilies != nil {
		t.Errorf("ExternalName service got IP families: %v %v", external.Spec.IPFamilyPolicy, external.Spec.IPFamilies)
	}

	ns := &corev1.Namespace{}
	ns.Name = "team-a"
	ns.Labels = map[string]string{corev1.LabelMetadataName: "forged", "x": "y"}
	Default(ns)
	Default(ns)
	if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Errorf("namespace defaults wrong: %+v", ns)
	}
	if ns.Labels[corev1.LabelMetadataName] != "team-a" || ns.Labels["x"] != "y" {
		t.Errorf("namespace name label wrong: %v", ns.Labels)
	}

	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	Default(node)
	if node.Status.Allocatable.Cpu().String() != "2" {
		t.Errorf("allocatable not defaulted from capacity: %v", node.Status.Allocatable)
	}
}
