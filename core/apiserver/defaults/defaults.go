// Package defaults fills in the fields Kubernetes fills in when an object is created or
// updated (restartPolicy Always, imagePullPolicy from the tag, probe timings, Deployment
// strategy, Service type, ...), following upstream's pkg/apis/*/v1/defaults.go. Default
// changes the object in place, sets only fields that are unset (except a namespace's
// kubernetes.io/metadata.name label, which always equals its name, as upstream), and is
// idempotent.
package defaults

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Default sets upstream's defaults on obj in place. Types without defaults are left alone.
func Default(obj runtime.Object) {
	if rbac(obj) { // rbac.go
		return
	}
	if policy(obj) { // policy.go
		return
	}
	if storage(obj) { // volumes.go
		return
	}
	if devices(obj) { // devices.go
		return
	}
	if autoscaling(obj) { // autoscaling.go
		return
	}
	if discovery(obj) { // discovery.go
		return
	}
	if wasmPolicy(obj) { // wasmpolicy.go
		return
	}
	if admissionRegistration(obj) { // admissionregistration.go
		return
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		Pod(o)
	case *corev1.PodTemplate:
		podTemplateSpec(&o.Template)
	case *corev1.Node:
		node(o)
	case *corev1.Namespace:
		namespace(o)
	case *corev1.Service:
		service(o)
	case *corev1.Endpoints:
		endpoints(o)
	case *corev1.Secret:
		if o.Type == "" {
			o.Type = corev1.SecretTypeOpaque
		}
		// stringData is write-only: upstream merges it into data (its keys win) as it
		// decodes a request, so validation sees the merged keys and no stored or returned
		// Secret carries it.
		if len(o.StringData) > 0 {
			if o.Data == nil {
				o.Data = make(map[string][]byte, len(o.StringData))
			}
			for k, v := range o.StringData {
				o.Data[k] = []byte(v)
			}
			o.StringData = nil
		}
	case *appsv1.Deployment:
		deployment(o)
	case *appsv1.ReplicaSet:
		replicaSet(o)
	case *appsv1.StatefulSet:
		statefulSet(o)
	case *appsv1.DaemonSet:
		daemonSet(o)
	case *batchv1.Job:
		job(o)
	case *batchv1.CronJob:
		cronJob(o)
	case *corev1.PodList:
		for i := range o.Items {
			Pod(&o.Items[i])
		}
	}
}

// Pod sets the defaults of a pod: spec, containers, probes, volumes, and requests taken from
// limits when only limits are given.
func Pod(pod *corev1.Pod) {
	podSpec(&pod.Spec)
	// Upstream defaults enableServiceLinks on pods only, not on workload templates.
	if pod.Spec.EnableServiceLinks == nil {
		t := corev1.DefaultEnableServiceLinks
		pod.Spec.EnableServiceLinks = &t
	}
	// spec.priority and spec.preemptionPolicy are the Priority admission plugin's to set,
	// from the pod's PriorityClass or the global default (admission/policy.go): a default
	// here would make it refuse every pod of a Never or globalDefault class.
	for i := range pod.Spec.Containers {
		requestsFromLimits(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		requestsFromLimits(&pod.Spec.InitContainers[i])
	}
}

func podTemplateSpec(t *corev1.PodTemplateSpec) {
	podSpec(&t.Spec)
}

func requestsFromLimits(c *corev1.Container) {
	if c.Resources.Limits == nil {
		return
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			c.Resources.Requests[name] = q.DeepCopy()
		}
	}
}

func podSpec(s *corev1.PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := int64(corev1.DefaultTerminationGracePeriodSeconds)
		s.TerminationGracePeriodSeconds = &g
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.HostNetwork {
		// With the host's network a container port is a host port.
		for _, ctrs := range [][]corev1.Container{s.InitContainers, s.Containers} {
			for i := range ctrs {
				for j := range ctrs[i].Ports {
					if ctrs[i].Ports[j].HostPort == 0 {
						ctrs[i].Ports[j].HostPort = ctrs[i].Ports[j].ContainerPort
					}
				}
			}
		}
	}
	for i := range s.InitContainers {
		container(&s.InitContainers[i])
	}
	for i := range s.Containers {
		container(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		container((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for i := range s.Volumes {
		volume(&s.Volumes[i])
	}
}

func container(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if f := c.Env[i].ValueFrom; f != nil && f.FieldRef != nil && f.FieldRef.APIVersion == "" {
			f.FieldRef.APIVersion = "v1"
		}
	}
	probe(c.LivenessProbe)
	probe(c.ReadinessProbe)
	probe(c.StartupProbe)
	if lc := c.Lifecycle; lc != nil {
		lifecycleHandler(lc.PostStart)
		lifecycleHandler(lc.PreStop)
	}
}

// pullPolicy is Always for an image without a tag or with :latest (which can change under the
// same name), IfNotPresent otherwise. A digest pins the image, so it counts as a tag.
func pullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	i := strings.LastIndex(name, ":")
	if i < 0 || name[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		empty := ""
		p.GRPC.Service = &empty
	}
}

func lifecycleHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		httpGet(h.HTTPGet)
	}
}

func httpGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func volume(v *corev1.Volume) {
	src := &v.VolumeSource
	if *src == (corev1.VolumeSource{}) {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	mode := corev1.ConfigMapVolumeSourceDefaultMode
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		m := mode
		src.ConfigMap.DefaultMode = &m
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		m := corev1.SecretVolumeSourceDefaultMode
		src.Secret.DefaultMode = &m
	}
	if src.DownwardAPI != nil && src.DownwardAPI.DefaultMode == nil {
		m := corev1.DownwardAPIVolumeSourceDefaultMode
		src.DownwardAPI.DefaultMode = &m
	}
	if src.Projected != nil && src.Projected.DefaultMode == nil {
		m := corev1.ProjectedVolumeSourceDefaultMode
		src.Projected.DefaultMode = &m
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		t := corev1.HostPathUnset
		src.HostPath.Type = &t
	}
}

// node copies capacity to allocatable when the kubelet reports no allocatable, as upstream.
func node(n *corev1.Node) {
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
}

func namespace(ns *corev1.Namespace) {
	// Upstream labels every namespace with its own name (always, even over a user's value)
	// so that namespace selectors can pick a namespace by name.
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	// The registry adds the "kubernetes" finalizer so that a namespace's content is deleted
	// before the namespace itself.
	if ns.DeletionTimestamp == nil {
		has := false
		for _, f := range ns.Spec.Finalizers {
			has = has || f == corev1.FinalizerKubernetes
		}
		if !has {
			ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
		}
	}
}

func service(svc *corev1.Service) {
	s := &svc.Spec
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.SessionAffinity == corev1.ServiceAffinityClientIP && (s.SessionAffinityConfig == nil || s.SessionAffinityConfig.ClientIP == nil || s.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil) {
		t := corev1.DefaultClientIPServiceAffinitySeconds
		s.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &t}}
	}
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if s.Type != corev1.ServiceTypeExternalName {
		if s.InternalTrafficPolicy == nil {
			p := corev1.ServiceInternalTrafficPolicyCluster
			s.InternalTrafficPolicy = &p
		}
		if len(s.ClusterIPs) == 0 && s.ClusterIP != "" {
			s.ClusterIPs = []string{s.ClusterIP}
		}
		// wasmkube's service network is single-stack IPv4 (see the allocator), so the
		// families are upstream's defaults on such a cluster: headless services without a
		// selector get RequireDualStack, every other one SingleStack.
		if s.IPFamilyPolicy == nil {
			p := corev1.IPFamilyPolicySingleStack
			if s.ClusterIP == corev1.ClusterIPNone && len(s.Selector) == 0 {
				p = corev1.IPFamilyPolicyRequireDualStack
			}
			s.IPFamilyPolicy = &p
		}
		if len(s.IPFamilies) == 0 {
			s.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
	}
	if (s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer) && s.ExternalTrafficPolicy == "" {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.Type == corev1.ServiceTypeLoadBalancer && s.AllocateLoadBalancerNodePorts == nil {
		t := true
		s.AllocateLoadBalancerNodePorts = &t
	}
}

func endpoints(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

func deployment(d *appsv1.Deployment) {
	s := &d.Spec
	if s.Replicas == nil {
		one := int32(1)
		s.Replicas = &one
	}
	if s.Strategy.Type == "" {
		s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.Strategy.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromString("25%")
			s.Strategy.RollingUpdate.MaxUnavailable = &v
		}
		if s.Strategy.RollingUpdate.MaxSurge == nil {
			v := intstr.FromString("25%")
			s.Strategy.RollingUpdate.MaxSurge = &v
		}
	}
	if s.RevisionHistoryLimit == nil {
		v := int32(10)
		s.RevisionHistoryLimit = &v
	}
	if s.ProgressDeadlineSeconds == nil {
		v := int32(600)
		s.ProgressDeadlineSeconds = &v
	}
	podTemplateSpec(&s.Template)
}

func replicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		one := int32(1)
		rs.Spec.Replicas = &one
	}
	podTemplateSpec(&rs.Spec.Template)
}
