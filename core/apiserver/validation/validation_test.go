package validation

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
)

// want is one expected error: its type, field path, and a piece of its detail.
type want struct {
	typ    field.ErrorType
	path   string
	detail string
}

func checkErrors(t *testing.T, got field.ErrorList, wants []want) {
	t.Helper()
	if len(wants) == 0 {
		if len(got) != 0 {
			t.Fatalf("want no errors, got:\n%s", got.ToAggregate())
		}
		return
	}
	for _, w := range wants {
		found := false
		for _, e := range got {
			if e.Type == w.typ && e.Field == w.path && strings.Contains(e.Detail, w.detail) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("missing error %s %s %q in:\n%v", w.typ, w.path, w.detail, got.ToAggregate())
		}
	}
	if len(got) != len(wants) {
		t.Errorf("want %d errors, got %d:\n%v", len(wants), len(got), got.ToAggregate())
	}
}

func validPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"true"}}},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "prod"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, SuccessThreshold: 2},
				Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}},
			}},
			Volumes:      []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Tolerations:  []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))}},
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}},
		},
	}
	defaults.Default(pod)
	return pod
}

func TestValidPodHasNoErrors(t *testing.T) {
	checkErrors(t, Validate(validPod()), nil)
}

func TestPodValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []want
	}{
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil },
			[]want{{field.ErrorTypeRequired, "spec.containers", ""}}},
		{"bad pod name", func(p *corev1.Pod) { p.Name = "Web_1" },
			[]want{{field.ErrorTypeInvalid, "metadata.name", "RFC 1123 subdomain"}}},
		{"missing name", func(p *corev1.Pod) { p.Name = "" },
			[]want{{field.ErrorTypeRequired, "metadata.name", "name or generateName is required"}}},
		{"missing namespace", func(p *corev1.Pod) { p.Namespace = "" },
			[]want{{field.ErrorTypeRequired, "metadata.namespace", ""}}},
		{"bad label", func(p *corev1.Pod) { p.Labels["bad key!"] = "x" },
			[]want{{field.ErrorTypeInvalid, "metadata.labels", "name part must consist of"}}},
		{"bad container name and missing image", func(p *corev1.Pod) {
			p.Spec.Containers[0].Name = "App"
			p.Spec.Containers[0].Image = ""
		}, []want{
			{field.ErrorTypeInvalid, "spec.containers[0].name", "RFC 1123 label"},
			{field.ErrorTypeRequired, "spec.containers[0].image", ""},
		}},
		{"duplicate name across init and app containers", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "init" },
			[]want{{field.ErrorTypeDuplicate, "spec.containers[0].name", ""}}},
		{"image with whitespace", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" },
			[]want{{field.ErrorTypeInvalid, "spec.containers[0].image", "leading or trailing whitespace"}}},
		{"ports", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{
				{Name: "http", ContainerPort: 70000, Protocol: corev1.ProtocolTCP},
				{Name: "http", ContainerPort: 81, Protocol: "HTTP"},
				{Name: "Not_Valid", Protocol: corev1.ProtocolUDP},
			}
		}, []want{
			{field.ErrorTypeInvalid, "spec.containers[0].ports[0].containerPort", "between 1 and 65535"},
			{field.ErrorTypeDuplicate, "spec.containers[0].ports[1].name", ""},
			{field.ErrorTypeNotSupported, "spec.containers[0].ports[1].protocol", "SCTP"},
			{field.ErrorTypeInvalid, "spec.containers[0].ports[2].name", "alpha-numeric"},
			{field.ErrorTypeRequired, "spec.containers[0].ports[2].containerPort", ""},
		}},
		{"requests above limits", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].resources.requests", "must be less than or equal to cpu limit of 1"}}},
		{"negative quantity and unknown resource", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("-1")
			p.Spec.Containers[0].Resources.Limits["gpu"] = resource.MustParse("1")
		}, []want{
			{field.ErrorTypeInvalid, "spec.containers[0].resources.limits[memory]", "must be greater than or equal to 0"},
			{field.ErrorTypeInvalid, "spec.containers[0].resources.limits[gpu]", "must be a standard resource for containers"},
			// the memory request was defaulted from the limit, so it is now above it
			{field.ErrorTypeInvalid, "spec.containers[0].resources.requests", "must be less than or equal to memory limit of -1"},
		}},
		{"extended resource needs equal request and limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["example.com/fpga"] = resource.MustParse("1")
		}, []want{{field.ErrorTypeRequired, "spec.containers[0].resources.limits", "Limit must be set for non overcommitable resources"}}},
		{"env names", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: ""}, {Name: "A=B"}}
		}, []want{
			{field.ErrorTypeRequired, "spec.containers[0].env[0].name", ""},
			{field.ErrorTypeInvalid, "spec.containers[0].env[1].name", "'='"},
		}},
		{"volumes", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes,
				corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				corev1.Volume{Name: "both", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
				corev1.Volume{Name: "none"})
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "missing", MountPath: "/data"})
		}, []want{
			{field.ErrorTypeDuplicate, "spec.volumes[1].name", ""},
			{field.ErrorTypeForbidden, "spec.volumes[2].emptyDir", "may not specify more than 1 volume type"},
			{field.ErrorTypeRequired, "spec.volumes[3]", "must specify a volume type"},
			{field.ErrorTypeNotFound, "spec.containers[0].volumeMounts[1].name", ""},
			{field.ErrorTypeInvalid, "spec.containers[0].volumeMounts[1].mountPath", "must be unique"},
		}},
		{"restart and dns policy", func(p *corev1.Pod) {
			p.Spec.RestartPolicy = "Sometimes"
			p.Spec.DNSPolicy = "Cloud"
		}, []want{
			{field.ErrorTypeNotSupported, "spec.restartPolicy", `"Always", "OnFailure", "Never"`},
			{field.ErrorTypeNotSupported, "spec.dnsPolicy", "ClusterFirst"},
		}},
		{"dnsPolicy None needs dnsConfig", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			[]want{{field.ErrorTypeRequired, "spec.dnsConfig", "must provide `dnsConfig`"}}},
		{"probe with two handlers and bad thresholds", func(p *corev1.Pod) {
			pr := p.Spec.Containers[0].LivenessProbe
			pr.Exec = &corev1.ExecAction{Command: []string{"true"}}
			pr.SuccessThreshold = 2
			pr.PeriodSeconds = -1
		}, []want{
			{field.ErrorTypeForbidden, "spec.containers[0].livenessProbe.httpGet", "may not specify more than 1 handler type"},
			{field.ErrorTypeInvalid, "spec.containers[0].livenessProbe.successThreshold", "must be 1"},
			{field.ErrorTypeInvalid, "spec.containers[0].livenessProbe.periodSeconds", "greater than or equal to 1"},
		}},
		{"probe without handler and bad port", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe.HTTPGet = nil
			p.Spec.Containers[0].ReadinessProbe.TCPSocket.Port = intstr.FromInt32(0)
		}, []want{
			{field.ErrorTypeRequired, "spec.containers[0].livenessProbe", "must specify a handler type"},
			{field.ErrorTypeInvalid, "spec.containers[0].readinessProbe.tcpSocket.port", "between 1 and 65535"},
		}},
		{"probe on a plain init container", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}}
		}, []want{{field.ErrorTypeForbidden, "spec.initContainers[0].readinessProbe", "restartPolicy=Always"}}},
		{"lifecycle hooks", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{},
				PreStop:   &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 31}, Exec: &corev1.ExecAction{}},
			}
		}, []want{
			{field.ErrorTypeRequired, "spec.containers[0].lifecycle.postStart", "must specify a handler type"},
			{field.ErrorTypeRequired, "spec.containers[0].lifecycle.preStop.exec.command", ""},
			{field.ErrorTypeForbidden, "spec.containers[0].lifecycle.preStop.sleep", "may not specify more than 1 handler type"},
		}},
		{"tolerations", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{
				{Key: "a", Operator: corev1.TolerationOpExists, Value: "v"},
				{Operator: corev1.TolerationOpEqual, Value: "v"},
				{Key: "b", Operator: "Like", Effect: "Sometimes"},
				{Key: "c", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To(int64(1))},
			}
		}, []want{
			{field.ErrorTypeInvalid, "spec.tolerations[0].operator", "value must be empty when `operator` is 'Exists'"},
			{field.ErrorTypeInvalid, "spec.tolerations[1].operator", "operator must be Exists when `key` is empty"},
			{field.ErrorTypeNotSupported, "spec.tolerations[2].operator", "Equal"},
			{field.ErrorTypeNotSupported, "spec.tolerations[2].effect", "NoExecute"},
			{field.ErrorTypeInvalid, "spec.tolerations[3].effect", "effect must be 'NoExecute' when `tolerationSeconds` is set"},
		}},
		{"node selector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"a": "bad value!"} },
			[]want{{field.ErrorTypeInvalid, "spec.nodeSelector", "a valid label must be"}}},
		{"affinity", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}},
					}}},
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 0, Preference: corev1.NodeSelectorTerm{}}},
				},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{}}},
			}
		}, []want{
			{field.ErrorTypeRequired, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values", "'In' or 'NotIn'"},
			{field.ErrorTypeInvalid, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "must be in the range 1-100"},
			{field.ErrorTypeRequired, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "can not be empty"},
		}},
		{"topology spread", func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints,
				corev1.TopologySpreadConstraint{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: "Maybe"},
				corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule})
		}, []want{
			{field.ErrorTypeInvalid, "spec.topologySpreadConstraints[1].maxSkew", "must be greater than zero"},
			{field.ErrorTypeNotSupported, "spec.topologySpreadConstraints[1].whenUnsatisfiable", "DoNotSchedule"},
			{field.ErrorTypeDuplicate, "spec.topologySpreadConstraints[2]", ""},
		}},
		{"grace period and deadline", func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(-1))
			p.Spec.ActiveDeadlineSeconds = ptr.To(int64(0))
		}, []want{
			{field.ErrorTypeInvalid, "spec.terminationGracePeriodSeconds", "must be greater than or equal to 0"},
			{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds", "must be between 1 and 2147483647"},
			// the preStop sleep of 5s is now longer than the grace period
			{field.ErrorTypeInvalid, "spec.containers[0].lifecycle.preStop.sleep.seconds", "terminationGracePeriodSeconds (-1)"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			checkErrors(t, Validate(pod), tt.want)
		})
	}
}

func TestPodUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []want
	}{
		{"image change allowed", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, nil},
		{"added toleration allowed", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists})
		}, nil},
		{"labels may change", func(p *corev1.Pod) { p.Labels["tier"] = "front" }, nil},
		{"activeDeadlineSeconds may be set", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(int64(60)) }, nil},
		{"removed toleration", func(p *corev1.Pod) { p.Spec.Tolerations = nil },
			[]want{{field.ErrorTypeForbidden, "spec.tolerations", "existing toleration can not be modified"}}},
		{"other spec field", func(p *corev1.Pod) { p.Spec.Containers[0].Env = nil },
			[]want{{field.ErrorTypeForbidden, "spec", "pod updates may not change fields other than `spec.containers[*].image`"}}},
		{"added container", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "b", TerminationMessagePolicy: "File", ImagePullPolicy: "Always"})
		}, []want{{field.ErrorTypeForbidden, "spec.containers", "pod updates may not add or remove containers"}}},
		{"name change", func(p *corev1.Pod) { p.Name = "other" },
			[]want{{field.ErrorTypeInvalid, "metadata.name", "field is immutable"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validPod()
			old.ResourceVersion = "5"
			pod := old.DeepCopy()
			tt.mutate(pod)
			checkErrors(t, ValidateUpdate(pod, old), tt.want)
		})
	}
	t.Run("activeDeadlineSeconds may only shrink", func(t *testing.T) {
		old := validPod()
		old.ResourceVersion = "5"
		old.Spec.ActiveDeadlineSeconds = ptr.To(int64(60))
		pod := old.DeepCopy()
		pod.Spec.ActiveDeadlineSeconds = ptr.To(int64(120))
		checkErrors(t, ValidateUpdate(pod, old), []want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds", "must be less than or equal to previous value"}})
		pod.Spec.ActiveDeadlineSeconds = nil
		checkErrors(t, ValidateUpdate(pod, old), []want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds", "must not update from a positive integer to nil value"}})
	})
	t.Run("type mismatch", func(t *testing.T) {
		errs := ValidateUpdate(validPod(), &corev1.Node{})
		if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
			t.Fatalf("want one internal error, got %v", errs)
		}
	})
}

func TestNodeAndNamespace(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", Unschedulable: true,
		Taints: []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}}}}
	checkErrors(t, Validate(node), nil)

	bad := node.DeepCopy()
	bad.Namespace = "default"
	bad.Spec.PodCIDR = "10.244.1.0"
	bad.Spec.Taints = append(bad.Spec.Taints,
		corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: "x", Effect: "Never"},
		corev1.Taint{Key: "y"})
	checkErrors(t, Validate(bad), []want{
		{field.ErrorTypeForbidden, "metadata.namespace", "not allowed on this type"},
		{field.ErrorTypeInvalid, "spec.podCIDR", "CIDR"},
		{field.ErrorTypeDuplicate, "spec.taints[1]", ""},
		{field.ErrorTypeNotSupported, "spec.taints[2].effect", "NoSchedule"},
		{field.ErrorTypeRequired, "spec.taints[3].effect", ""},
	})

	old := node.DeepCopy()
	old.ResourceVersion = "3"
	upd := old.DeepCopy()
	upd.Spec.PodCIDR = "10.244.2.0/24"
	checkErrors(t, ValidateUpdate(upd, old), []want{{field.ErrorTypeForbidden, "spec.podCIDR", "may not change podCIDR"}})
	upd = old.DeepCopy()
	upd.Spec.Unschedulable = false
	checkErrors(t, ValidateUpdate(upd, old), nil)
	upd.ResourceVersion = ""
	checkErrors(t, ValidateUpdate(upd, old), []want{{field.ErrorTypeInvalid, "metadata.resourceVersion", "must be specified for an update"}})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	defaults.Default(ns)
	checkErrors(t, Validate(ns), nil)
	ns.Name = "team.a"
	checkErrors(t, Validate(ns), []want{{field.ErrorTypeInvalid, "metadata.name", "must not contain dots"}})
}

func validDeployment() *appsv1.Deployment {
	pod := validPod()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: pod.Spec},
		},
	}
	defaults.Default(d)
	return d
}

func TestDeployment(t *testing.T) {
	checkErrors(t, Validate(validDeployment()), nil)
	tests := []struct {
		name   string
		mutate func(d *appsv1.Deployment)
		want   []want
	}{
		{"no selector", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []want{{field.ErrorTypeRequired, "spec.selector", ""}}},
		{"empty selector", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} },
			[]want{{field.ErrorTypeInvalid, "spec.selector", "empty selector is invalid for deployment"}}},
		{"selector does not match", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "db"} },
			[]want{{field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"}}},
		{"negative replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(int32(-1)) },
			[]want{{field.ErrorTypeInvalid, "spec.replicas", "must be greater than or equal to 0"}}},
		{"template pod spec checked with its path", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = ""
			d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		}, []want{
			{field.ErrorTypeRequired, "spec.template.spec.containers[0].image", ""},
			{field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy", `"Always"`},
		}},
		{"surge and unavailable both zero", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("0%"))
		}, []want{{field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when `maxSurge` is 0"}}},
		{"bad strategy", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" },
			[]want{{field.ErrorTypeNotSupported, "spec.strategy.type", "Recreate"}}},
		{"recreate with rollingUpdate", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
			[]want{{field.ErrorTypeForbidden, "spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"}}},
		{"maxUnavailable over 100%", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("150%"))
		},
			[]want{{field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxUnavailable", "must not be greater than 100%"}}},
		{"progress deadline", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 },
			[]want{{field.ErrorTypeInvalid, "spec.progressDeadlineSeconds", "must be greater than minReadySeconds"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := validDeployment()
			tt.mutate(d)
			checkErrors(t, Validate(d), tt.want)
		})
	}
	old := validDeployment()
	old.ResourceVersion = "7"
	upd := old.DeepCopy()
	upd.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "2"}}
	upd.Spec.Template.Labels["v"] = "2"
	checkErrors(t, ValidateUpdate(upd, old), []want{{field.ErrorTypeInvalid, "spec.selector", "field is immutable"}})
	upd = old.DeepCopy()
	upd.Spec.Replicas = ptr.To(int32(5))
	checkErrors(t, ValidateUpdate(upd, old), nil)
}

func TestReplicaSet(t *testing.T) {
	d := validDeployment()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"}, Spec: appsv1.ReplicaSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template}}
	defaults.Default(rs)
	checkErrors(t, Validate(rs), nil)
	rs.Spec.Selector = &metav1.LabelSelector{}
	checkErrors(t, Validate(rs), []want{{field.ErrorTypeInvalid, "spec.selector", "empty selector is invalid for replicaset"}})
}

func TestOtherTypes(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
		want []want
	}{
		{"valid service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}}, nil},
		{"bad service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "1web", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: "Magic", SessionAffinity: corev1.ServiceAffinityNone, ClusterIP: "10.0.0",
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}, {Name: "b", Port: 0, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80), NodePort: 30000}}}},
			[]want{
				{field.ErrorTypeInvalid, "metadata.name", "DNS-1035 label"},
				{field.ErrorTypeNotSupported, "spec.type", "ClusterIP"},
				{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "valid IP"},
				{field.ErrorTypeRequired, "spec.ports[0].name", ""},
				{field.ErrorTypeInvalid, "spec.ports[1].port", "between 1 and 65535"},
			}},
		{"service without ports", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone}},
			[]want{{field.ErrorTypeRequired, "spec.ports", ""}}},
		{"endpoints", &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.300"}}, Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}}, {}}},
			[]want{
				{field.ErrorTypeInvalid, "subsets[0].addresses[0].ip", "valid IP"},
				{field.ErrorTypeRequired, "subsets[1]", "must specify `addresses` or `notReadyAddresses`"},
			}},
		{"configmap keys", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
			Data: map[string]string{"ok.txt": "x", "bad/key": "y", "dup": "z"}, BinaryData: map[string][]byte{"dup": []byte("z")}},
			[]want{
				{field.ErrorTypeInvalid, "data[bad/key]", "a valid config key must consist of"},
				{field.ErrorTypeInvalid, "data[dup]", "duplicate of key present in binaryData"},
			}},
		{"event namespace mismatch", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "other"}, Type: "Fatal"},
			[]want{
				{field.ErrorTypeInvalid, "involvedObject.namespace", "does not match event.namespace"},
				{field.ErrorTypeNotSupported, "type", "Normal"},
			}},
		{"lease", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(0)), LeaseTransitions: ptr.To(int32(-1))}},
			[]want{
				{field.ErrorTypeInvalid, "spec.leaseDurationSeconds", "must be greater than 0"},
				{field.ErrorTypeInvalid, "spec.leaseTransitions", "must be greater than or equal to 0"},
			}},
		{"scale", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: -2}},
			[]want{{field.ErrorTypeInvalid, "spec.replicas", "must be greater than or equal to 0"}}},
		{"binding to a node", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, nil},
		{"binding without a target", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Target: corev1.ObjectReference{Kind: "Pod"}},
			[]want{
				{field.ErrorTypeNotSupported, "target.kind", "Node"},
				{field.ErrorTypeRequired, "target.name", ""},
			}},
		{"unknown type: metadata only", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name", Namespace: "default"}},
			[]want{{field.ErrorTypeInvalid, "metadata.name", "RFC 1123 subdomain"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, Validate(tt.obj), tt.want)
		})
	}
}

func TestServiceUpdateKeepsClusterIP(t *testing.T) {
	old := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "2"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}}}}
	upd := old.DeepCopy()
	upd.Spec.ClusterIP, upd.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"}
	checkErrors(t, ValidateUpdate(upd, old), []want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "may not change once set"}})
}

func TestConfigMapImmutable(t *testing.T) {
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default", ResourceVersion: "2"}, Data: map[string]string{"a": "1"}, Immutable: ptr.To(true)}
	upd := old.DeepCopy()
	upd.Data["a"] = "2"
	checkErrors(t, ValidateUpdate(upd, old), []want{{field.ErrorTypeForbidden, "data", "field is immutable when `immutable` is set"}})
}

// BenchmarkDefaultAndValidatePod is the per-request cost of defaulting and validating a
// typical pod on create, which sits on the API server's write path.
func BenchmarkDefaultAndValidatePod(b *testing.B) {
	pod := validPod()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := pod.DeepCopy()
		defaults.Default(p)
		if errs := Validate(p); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkValidatePodUpdate(b *testing.B) {
	old := validPod()
	old.ResourceVersion = "1"
	pod := old.DeepCopy()
	pod.Spec.Containers[0].Image = "nginx:2"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if errs := ValidateUpdate(pod, old); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
