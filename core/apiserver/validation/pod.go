package validation

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	isNegativeErrorMsg    = apimachineryvalidation.IsNegativeErrorMsg
	isNotPositiveErrorMsg = "must be greater than zero"
)

var (
	supportedRestartPolicies    = []string{string(corev1.RestartPolicyAlways), string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}
	supportedDNSPolicies        = []string{string(corev1.DNSClusterFirstWithHostNet), string(corev1.DNSClusterFirst), string(corev1.DNSDefault), string(corev1.DNSNone)}
	supportedPortProtocols      = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
	supportedPullPolicies       = []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}
	supportedTermMsgPolicies    = []string{string(corev1.TerminationMessageFallbackToLogsOnError), string(corev1.TerminationMessageReadFile)}
	supportedHTTPSchemes        = []string{string(corev1.URISchemeHTTP), string(corev1.URISchemeHTTPS)}
	supportedTaintEffects       = []string{string(corev1.TaintEffectNoExecute), string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule)}
	supportedTolerationOps      = []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}
	supportedUnsatisfiable      = []string{string(corev1.DoNotSchedule), string(corev1.ScheduleAnyway)}
	supportedNodeSelectorOps    = []string{string(corev1.NodeSelectorOpDoesNotExist), string(corev1.NodeSelectorOpExists), string(corev1.NodeSelectorOpGt), string(corev1.NodeSelectorOpIn), string(corev1.NodeSelectorOpLt), string(corev1.NodeSelectorOpNotIn)}
	supportedPreemptionPolicies = []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}
	supportedContainerRestart   = []string{string(corev1.ContainerRestartPolicyAlways)}
)

func validatePod(pod *corev1.Pod) field.ErrorList {
	allErrs := objectMeta(&pod.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	allErrs = append(allErrs, validatePodSpec(&pod.Spec, field.NewPath("spec"))...)
	// Ephemeral containers are added to a running pod through pods/ephemeralcontainers only.
	if len(pod.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot have ephemeral containers on create"))
	}
	return allErrs
}

// validatePodSpec checks a pod spec; fldPath is spec for a pod and spec.template.spec for a
// workload's template.
func validatePodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	volumes, vErrs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	allErrs = append(allErrs, vErrs...)

	if len(spec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("containers"), ""))
	}
	names := sets.New[string]()
	allErrs = append(allErrs, validateContainers(spec.InitContainers, true, volumes, names, spec, fldPath.Child("initContainers"))...)
	allErrs = append(allErrs, validateContainers(spec.Containers, false, volumes, names, spec, fldPath.Child("containers"))...)
	allErrs = append(allErrs, validateEphemeralContainers(spec.EphemeralContainers, names, volumes, spec, fldPath.Child("ephemeralContainers"))...)
	allErrs = append(allErrs, validateHostPorts(spec, fldPath)...)

	allErrs = append(allErrs, validateRestartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	allErrs = append(allErrs, validateDNSPolicy(spec.DNSPolicy, fldPath.Child("dnsPolicy"))...)
	if spec.DNSPolicy == corev1.DNSNone && spec.DNSConfig == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
	}
	if spec.DNSConfig != nil {
		allErrs = append(allErrs, validateDNSConfig(spec.DNSConfig, fldPath.Child("dnsConfig"))...)
	}
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	allErrs = append(allErrs, validateOptionalName(spec.NodeName, utilvalidation.IsDNS1123Subdomain, fldPath.Child("nodeName"))...)
	allErrs = append(allErrs, validateOptionalName(spec.ServiceAccountName, utilvalidation.IsDNS1123Subdomain, fldPath.Child("serviceAccountName"))...)
	allErrs = append(allErrs, validateOptionalName(spec.Hostname, utilvalidation.IsDNS1123Label, fldPath.Child("hostname"))...)
	allErrs = append(allErrs, validateOptionalName(spec.Subdomain, utilvalidation.IsDNS1123Label, fldPath.Child("subdomain"))...)
	allErrs = append(allErrs, validateOptionalName(spec.PriorityClassName, utilvalidation.IsDNS1123Subdomain, fldPath.Child("priorityClassName"))...)
	allErrs = append(allErrs, validatePodSchedulingGroup(spec.SchedulingGroup, fldPath.Child("schedulingGroup"))...)
	if spec.PreemptionPolicy != nil && !slices.Contains(supportedPreemptionPolicies, string(*spec.PreemptionPolicy)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("preemptionPolicy"), *spec.PreemptionPolicy, supportedPreemptionPolicies))
	}
	if spec.TerminationGracePeriodSeconds != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(*spec.TerminationGracePeriodSeconds, fldPath.Child("terminationGracePeriodSeconds"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, utilvalidation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	if spec.Affinity != nil {
		allErrs = append(allErrs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	}
	allErrs = append(allErrs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	allErrs = append(allErrs, validateReadinessGates(spec.ReadinessGates, fldPath.Child("readinessGates"))...)
	if spec.SecurityContext != nil {
		allErrs = append(allErrs, validatePodSecurityContext(spec.SecurityContext, fldPath.Child("securityContext"))...)
	}
	return allErrs
}

// validateOptionalName checks a name field that may be left empty against rule (a DNS-1123
// subdomain or label), reporting each of the rule's messages.
func validateOptionalName(name string, rule func(string) []string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range rule(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

func validateRestartPolicy(p corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	switch {
	case p == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case !slices.Contains(supportedRestartPolicies, string(p)):
		return field.ErrorList{field.NotSupported(fldPath, p, supportedRestartPolicies)}
	}
	return nil
}

func validateDNSPolicy(p corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	switch {
	case p == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case !slices.Contains(supportedDNSPolicies, string(p)):
		return field.ErrorList{field.NotSupported(fldPath, p, supportedDNSPolicies)}
	}
	return nil
}

func validateDNSConfig(c *corev1.PodDNSConfig, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(c.Nameservers) > 3 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nameservers"), c.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range c.Nameservers {
		allErrs = append(allErrs, utilvalidation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	for i, s := range c.Searches {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(strings.TrimSuffix(s, ".")) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range c.Options {
		if o.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("options").Index(i), "Option.Name must not be empty"))
		}
	}
	return allErrs
}

// validateRunAs checks the user and group IDs that pod and container security contexts share.
func validateRunAs(user, group *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if user != nil {
		for _, msg := range utilvalidation.IsValidUserID(*user) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("runAsUser"), *user, msg))
		}
	}
	if group != nil {
		for _, msg := range utilvalidation.IsValidGroupID(*group) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("runAsGroup"), *group, msg))
		}
	}
	return allErrs
}

func validatePodSecurityContext(sc *corev1.PodSecurityContext, fldPath *field.Path) field.ErrorList {
	allErrs := validateRunAs(sc.RunAsUser, sc.RunAsGroup, fldPath)
	if sc.FSGroup != nil {
		for _, msg := range utilvalidation.IsValidGroupID(*sc.FSGroup) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	for i, g := range sc.SupplementalGroups {
		for _, msg := range utilvalidation.IsValidGroupID(g) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("supplementalGroups").Index(i), g, msg))
		}
	}
	return allErrs
}

// validateVolumes checks volume names (DNS-1123 label, unique) and that each names exactly one
// source; it returns the set of valid names for the volumeMounts check.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, vol := range volumes {
		idxPath := fldPath.Index(i)
		var nameErrs field.ErrorList
		if vol.Name == "" {
			nameErrs = append(nameErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsDNS1123Label(vol.Name) {
				nameErrs = append(nameErrs, field.Invalid(idxPath.Child("name"), vol.Name, msg))
			}
		}
		if names.Has(vol.Name) {
			nameErrs = append(nameErrs, field.Duplicate(idxPath.Child("name"), vol.Name))
		}
		if len(nameErrs) == 0 {
			names.Insert(vol.Name)
		}
		allErrs = append(allErrs, nameErrs...)
		allErrs = append(allErrs, validateVolumeSource(&vol.VolumeSource, idxPath)...)
	}
	return names, allErrs
}

func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	set := setVolumeSources(src)
	if len(set) == 0 {
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	}
	for _, name := range set[1:] {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
	}
	if src.HostPath != nil {
		if src.HostPath.Path == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("hostPath", "path"), ""))
		} else if hasDotDot(src.HostPath.Path) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("hostPath", "path"), src.HostPath.Path, "must not contain '..'"))
		}
	}
	if src.EmptyDir != nil && src.EmptyDir.SizeLimit != nil && src.EmptyDir.SizeLimit.Sign() < 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
	}
	if src.ConfigMap != nil {
		if src.ConfigMap.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("configMap", "name"), ""))
		}
		allErrs = append(allErrs, validateKeyToPaths(src.ConfigMap.Items, fldPath.Child("configMap", "items"))...)
	}
	if src.Secret != nil {
		if src.Secret.SecretName == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("secret", "secretName"), ""))
		}
		allErrs = append(allErrs, validateKeyToPaths(src.Secret.Items, fldPath.Child("secret", "items"))...)
	}
	if src.PersistentVolumeClaim != nil && src.PersistentVolumeClaim.ClaimName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
	}
	return allErrs
}

// setVolumeSources lists the json names of the volume sources that are set, in field order.
func setVolumeSources(s *corev1.VolumeSource) []string {
	var set []string
	add := func(ok bool, name string) {
		if ok {
			set = append(set, name)
		}
	}
	add(s.HostPath != nil, "hostPath")
	add(s.EmptyDir != nil, "emptyDir")
	add(s.GCEPersistentDisk != nil, "gcePersistentDisk")
	add(s.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	add(s.GitRepo != nil, "gitRepo")
	add(s.Secret != nil, "secret")
	add(s.NFS != nil, "nfs")
	add(s.ISCSI != nil, "iscsi")
	add(s.Glusterfs != nil, "glusterfs")
	add(s.PersistentVolumeClaim != nil, "persistentVolumeClaim")
	add(s.RBD != nil, "rbd")
	add(s.FlexVolume != nil, "flexVolume")
	add(s.Cinder != nil, "cinder")
	add(s.CephFS != nil, "cephfs")
	add(s.Flocker != nil, "flocker")
	add(s.DownwardAPI != nil, "downwardAPI")
	add(s.FC != nil, "fc")
	add(s.AzureFile != nil, "azureFile")
	add(s.ConfigMap != nil, "configMap")
	add(s.VsphereVolume != nil, "vsphereVolume")
	add(s.Quobyte != nil, "quobyte")
	add(s.AzureDisk != nil, "azureDisk")
	add(s.PhotonPersistentDisk != nil, "photonPersistentDisk")
	add(s.Projected != nil, "projected")
	add(s.PortworxVolume != nil, "portworxVolume")
	add(s.ScaleIO != nil, "scaleIO")
	add(s.StorageOS != nil, "storageos")
	add(s.CSI != nil, "csi")
	add(s.Ephemeral != nil, "ephemeral")
	add(s.Image != nil, "image")
	return set
}

func validateKeyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, kp := range items {
		idxPath := fldPath.Index(i)
		if kp.Key == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("key"), ""))
		}
		if kp.Path == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("path"), ""))
		} else if path.IsAbs(kp.Path) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("path"), kp.Path, "must be a relative path"))
		} else if hasDotDot(kp.Path) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("path"), kp.Path, "must not contain '..'"))
		}
	}
	return allErrs
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// validateContainers checks one list of containers (init or app). names collects every
// container name of the pod so duplicates across the two lists are caught.
func validateContainers(containers []corev1.Container, init bool, volumes, names sets.Set[string], spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range containers {
		ctr := &containers[i]
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		if ctr.Name == "" {
			allErrs = append(allErrs, field.Required(namePath, ""))
		} else {
			for _, msg := range utilvalidation.IsDNS1123Label(ctr.Name) {
				allErrs = append(allErrs, field.Invalid(namePath, ctr.Name, msg))
			}
			if names.Has(ctr.Name) {
				allErrs = append(allErrs, field.Duplicate(namePath, ctr.Name))
			}
			names.Insert(ctr.Name)
		}
		allErrs = append(allErrs, validateImage(ctr.Image, idxPath.Child("image"))...)
		if ctr.ImagePullPolicy != "" && !slices.Contains(supportedPullPolicies, string(ctr.ImagePullPolicy)) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("imagePullPolicy"), ctr.ImagePullPolicy, supportedPullPolicies))
		}
		if ctr.TerminationMessagePolicy != "" && !slices.Contains(supportedTermMsgPolicies, string(ctr.TerminationMessagePolicy)) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("terminationMessagePolicy"), ctr.TerminationMessagePolicy, supportedTermMsgPolicies))
		}
		allErrs = append(allErrs, validateContainerPorts(ctr.Ports, idxPath.Child("ports"))...)
		allErrs = append(allErrs, validateEnv(ctr.Env, idxPath.Child("env"))...)
		allErrs = append(allErrs, validateEnvFrom(ctr.EnvFrom, idxPath.Child("envFrom"))...)
		allErrs = append(allErrs, validateVolumeMounts(ctr.VolumeMounts, volumes, idxPath.Child("volumeMounts"))...)
		allErrs = append(allErrs, validateResources(&ctr.Resources, idxPath.Child("resources"))...)
		if ctr.SecurityContext != nil {
			allErrs = append(allErrs, validateSecurityContext(ctr.SecurityContext, idxPath.Child("securityContext"))...)
		}

		restartable := false
		if init {
			if ctr.RestartPolicy != nil {
				if !slices.Contains(supportedContainerRestart, string(*ctr.RestartPolicy)) {
					allErrs = append(allErrs, field.NotSupported(idxPath.Child("restartPolicy"), *ctr.RestartPolicy, supportedContainerRestart))
				} else {
					restartable = true
				}
			}
		} else if ctr.RestartPolicy != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("restartPolicy"), "may not be set for non-init containers"))
		}
		// Probes and lifecycle hooks make sense only for containers that keep running: app
		// containers and restartable ("sidecar") init containers.
		if init && !restartable {
			if ctr.Lifecycle != nil {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("lifecycle"), "may not be set for init containers without restartPolicy=Always"))
			}
			if ctr.LivenessProbe != nil {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("livenessProbe"), "may not be set for init containers without restartPolicy=Always"))
			}
			if ctr.ReadinessProbe != nil {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("readinessProbe"), "may not be set for init containers without restartPolicy=Always"))
			}
			if ctr.StartupProbe != nil {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("startupProbe"), "may not be set for init containers without restartPolicy=Always"))
			}
			continue
		}
		if ctr.Lifecycle != nil {
			allErrs = append(allErrs, validateLifecycle(ctr.Lifecycle, spec, idxPath.Child("lifecycle"))...)
		}
		allErrs = append(allErrs, validateProbe(ctr.LivenessProbe, true, idxPath.Child("livenessProbe"))...)
		allErrs = append(allErrs, validateProbe(ctr.ReadinessProbe, false, idxPath.Child("readinessProbe"))...)
		allErrs = append(allErrs, validateProbe(ctr.StartupProbe, true, idxPath.Child("startupProbe"))...)
	}
	return allErrs
}

func validateImage(image string, fldPath *field.Path) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if image != strings.TrimSpace(image) {
		return field.ErrorList{field.Invalid(fldPath, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

func validateSecurityContext(sc *corev1.SecurityContext, fldPath *field.Path) field.ErrorList {
	allErrs := validateRunAs(sc.RunAsUser, sc.RunAsGroup, fldPath)
	if sc.Privileged != nil && *sc.Privileged && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
	}
	return allErrs
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		idxPath := fldPath.Index(i)
		if port.Name != "" {
			for _, msg := range utilvalidation.IsValidPortName(port.Name) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("hostPort"), port.HostPort, msg))
			}
		}
		allErrs = append(allErrs, validateProtocol(port.Protocol, idxPath.Child("protocol"))...)
		if port.HostIP != "" {
			allErrs = append(allErrs, utilvalidation.IsValidIP(idxPath.Child("hostIP"), port.HostIP)...)
		}
	}
	return allErrs
}

func validateProtocol(p corev1.Protocol, fldPath *field.Path) field.ErrorList {
	switch {
	case p == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case !slices.Contains(supportedPortProtocols, string(p)):
		return field.ErrorList{field.NotSupported(fldPath, p, supportedPortProtocols)}
	}
	return nil
}

// validateHostPorts refuses two containers of one pod asking for the same host port and
// protocol, which could never both be bound.
func validateHostPorts(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	check := func(ctrs []corev1.Container, p *field.Path) {
		for ci := range ctrs {
			for pi, port := range ctrs[ci].Ports {
				if port.HostPort == 0 {
					continue
				}
				key := fmt.Sprintf("%s/%s/%d", port.HostIP, port.Protocol, port.HostPort)
				if seen.Has(key) {
					allErrs = append(allErrs, field.Duplicate(p.Index(ci).Child("ports").Index(pi).Child("hostPort"), fmt.Sprintf("%d/%s", port.HostPort, port.Protocol)))
				}
				seen.Insert(key)
			}
		}
	}
	check(spec.InitContainers, fldPath.Child("initContainers"))
	check(spec.Containers, fldPath.Child("containers"))
	return allErrs
}

func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range env {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom != nil {
			allErrs = append(allErrs, validateEnvVarSource(ev, idxPath.Child("valueFrom"))...)
		}
	}
	return allErrs
}

func validateEnvVarSource(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	src := ev.ValueFrom
	n := 0
	if src.FieldRef != nil {
		n++
		if src.FieldRef.FieldPath == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("fieldRef", "fieldPath"), ""))
		}
	}
	if src.ResourceFieldRef != nil {
		n++
		if src.ResourceFieldRef.Resource == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("resourceFieldRef", "resource"), ""))
		}
	}
	if src.ConfigMapKeyRef != nil {
		n++
		if src.ConfigMapKeyRef.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("configMapKeyRef", "name"), ""))
		}
		allErrs = append(allErrs, validateConfigMapKeyField(src.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef", "key"))...)
	}
	if src.SecretKeyRef != nil {
		n++
		if src.SecretKeyRef.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("secretKeyRef", "name"), ""))
		}
		allErrs = append(allErrs, validateConfigMapKeyField(src.SecretKeyRef.Key, fldPath.Child("secretKeyRef", "key"))...)
	}
	if src.FileKeyRef != nil {
		n++
	}
	switch {
	case n == 0:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case n > 1:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	if ev.Value != "" && n != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	}
	return allErrs
}

func validateConfigMapKeyField(key string, fldPath *field.Path) field.ErrorList {
	if key == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(fldPath, key, msg))
	}
	return allErrs
}

func validateEnvFrom(envFrom []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ef := range envFrom {
		idxPath := fldPath.Index(i)
		n := 0
		if ef.ConfigMapRef != nil {
			n++
			if ef.ConfigMapRef.Name == "" {
				allErrs = append(allErrs, field.Required(idxPath.Child("configMapRef", "name"), ""))
			}
		}
		if ef.SecretRef != nil {
			n++
			if ef.SecretRef.Name == "" {
				allErrs = append(allErrs, field.Required(idxPath.Child("secretRef", "name"), ""))
			}
		}
		switch {
		case n == 0:
			allErrs = append(allErrs, field.Invalid(idxPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			allErrs = append(allErrs, field.Invalid(idxPath, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	paths := sets.New[string]()
	for i, mnt := range mounts {
		idxPath := fldPath.Index(i)
		if mnt.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else if !volumes.Has(mnt.Name) {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), mnt.Name))
		}
		if mnt.MountPath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("mountPath"), ""))
		} else if paths.Has(mnt.MountPath) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), mnt.MountPath, "must be unique"))
		}
		paths.Insert(mnt.MountPath)
		if mnt.SubPath != "" {
			if path.IsAbs(mnt.SubPath) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPath"), mnt.SubPath, "must be a relative path"))
			} else if hasDotDot(mnt.SubPath) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPath"), mnt.SubPath, "must not contain '..'"))
			}
		}
	}
	return allErrs
}

// isNativeResource reports whether a resource name belongs to Kubernetes itself (no domain,
// or a kubernetes.io domain) rather than to an extended resource of a device plugin.
func isNativeResource(name corev1.ResourceName) bool {
	s := string(name)
	return !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/")
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

var standardContainerResources = sets.New(string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage))

func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	s := string(name)
	for _, msg := range utilvalidation.IsQualifiedName(s) {
		allErrs = append(allErrs, field.Invalid(fldPath, s, msg))
	}
	if !strings.Contains(s, "/") {
		if !standardContainerResources.Has(s) && !isHugePages(name) {
			allErrs = append(allErrs, field.Invalid(fldPath, s, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && strings.HasPrefix(s, corev1.ResourceDefaultNamespacePrefix) {
		allErrs = append(allErrs, field.Invalid(fldPath, s, "doesn't follow extended resource name standard"))
	}
	return allErrs
}

func validateResources(req *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath := fldPath.Child("limits")
	reqPath := fldPath.Child("requests")
	for name, q := range req.Limits {
		p := limPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, p)...)
		allErrs = append(allErrs, validateResourceQuantity(name, q, p)...)
	}
	for name, q := range req.Requests {
		p := reqPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, p)...)
		allErrs = append(allErrs, validateResourceQuantity(name, q, p)...)
		overcommit := isNativeResource(name) && !isHugePages(name)
		if lim, ok := req.Limits[name]; ok {
			if q.Cmp(lim) != 0 && !overcommit {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
			} else if q.Cmp(lim) > 0 {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
			}
		} else if !overcommit {
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
	}
	return allErrs
}

func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), isNegativeErrorMsg)}
	}
	// Everything but cpu, memory, ephemeral storage and huge pages is counted in whole units.
	if !standardContainerResources.Has(string(name)) && !isHugePages(name) && q.MilliValue()%1000 != 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), "must be an integer")}
	}
	return nil
}

// validateProbe checks one probe: exactly one handler, valid ports, and thresholds of at least
// 1 (0 never reaches here after defaulting). Liveness and startup probes must succeed once.
func validateProbe(probe *corev1.Probe, successMustBeOne bool, fldPath *field.Path) field.ErrorList {
	if probe == nil {
		return nil
	}
	allErrs := validateProbeHandler(&probe.ProbeHandler, fldPath)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(probe.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	for _, f := range []struct {
		name string
		v    int32
	}{{"timeoutSeconds", probe.TimeoutSeconds}, {"periodSeconds", probe.PeriodSeconds}, {"successThreshold", probe.SuccessThreshold}, {"failureThreshold", probe.FailureThreshold}} {
		if f.v < 1 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), f.v, "must be greater than or equal to 1"))
		}
	}
	if successMustBeOne && probe.SuccessThreshold != 1 && probe.SuccessThreshold >= 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("successThreshold"), probe.SuccessThreshold, "must be 1"))
	}
	if probe.TerminationGracePeriodSeconds != nil && *probe.TerminationGracePeriodSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *probe.TerminationGracePeriodSeconds, isNotPositiveErrorMsg))
	}
	return allErrs
}

// handlerKind is one way a probe or lifecycle hook may act: set says whether the spec names it,
// validate checks it.
type handlerKind struct {
	name     string
	set      bool
	validate func() field.ErrorList
}

// validateOneHandler checks that exactly one of kinds is set and validates that one; kinds after
// the first set one are forbidden, as upstream.
func validateOneHandler(fldPath *field.Path, kinds ...handlerKind) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	for _, k := range kinds {
		if !k.set {
			continue
		}
		if n++; n > 1 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(k.name), "may not specify more than 1 handler type"))
			continue
		}
		allErrs = append(allErrs, k.validate()...)
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a handler type"))
	}
	return allErrs
}

// commonHandlerKinds are the kinds probes and lifecycle hooks share.
func commonHandlerKinds(exec *corev1.ExecAction, httpGet *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, fldPath *field.Path) []handlerKind {
	return []handlerKind{
		{"exec", exec != nil, func() field.ErrorList { return validateExec(exec, fldPath.Child("exec")) }},
		{"httpGet", httpGet != nil, func() field.ErrorList { return validateHTTPGet(httpGet, fldPath.Child("httpGet")) }},
		{"tcpSocket", tcp != nil, func() field.ErrorList { return validatePortNumOrName(tcp.Port, fldPath.Child("tcpSocket", "port")) }},
	}
}

func validateProbeHandler(h *corev1.ProbeHandler, fldPath *field.Path) field.ErrorList {
	grpc := handlerKind{"grpc", h.GRPC != nil, func() field.ErrorList {
		var allErrs field.ErrorList
		for _, msg := range utilvalidation.IsValidPortNum(int(h.GRPC.Port)) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("grpc", "port"), h.GRPC.Port, msg))
		}
		return allErrs
	}}
	return validateOneHandler(fldPath, append(commonHandlerKinds(h.Exec, h.HTTPGet, h.TCPSocket, fldPath), grpc)...)
}

func validateLifecycle(lc *corev1.Lifecycle, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	grace := spec.TerminationGracePeriodSeconds
	var allErrs field.ErrorList
	if lc.PostStart != nil {
		allErrs = append(allErrs, validateLifecycleHandler(lc.PostStart, grace, fldPath.Child("postStart"))...)
	}
	if lc.PreStop != nil {
		allErrs = append(allErrs, validateLifecycleHandler(lc.PreStop, grace, fldPath.Child("preStop"))...)
	}
	if lc.StopSignal != nil && spec.OS == nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("stopSignal"), "may not be set for containers with empty `spec.os.name`"))
	}
	return allErrs
}

func validateLifecycleHandler(h *corev1.LifecycleHandler, grace *int64, fldPath *field.Path) field.ErrorList {
	sleep := handlerKind{"sleep", h.Sleep != nil, func() field.ErrorList {
		limit := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if grace != nil {
			limit = *grace
		}
		if h.Sleep.Seconds < 0 || h.Sleep.Seconds > limit {
			return field.ErrorList{field.Invalid(fldPath.Child("sleep", "seconds"), h.Sleep.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", limit))}
		}
		return nil
	}}
	return validateOneHandler(fldPath, append(commonHandlerKinds(h.Exec, h.HTTPGet, h.TCPSocket, fldPath), sleep)...)
}

func validateExec(e *corev1.ExecAction, fldPath *field.Path) field.ErrorList {
	if len(e.Command) == 0 {
		return field.ErrorList{field.Required(fldPath.Child("command"), "")}
	}
	return nil
}

func validateHTTPGet(h *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if h.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	if !slices.Contains(supportedHTTPSchemes, string(h.Scheme)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scheme"), h.Scheme, supportedHTTPSchemes))
	}
	for i, hdr := range h.HTTPHeaders {
		for _, msg := range utilvalidation.IsHTTPHeaderName(hdr.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("httpHeaders").Index(i).Child("name"), hdr.Name, msg))
		}
	}
	return allErrs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range utilvalidation.IsValidPortNum(port.IntValue()) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range utilvalidation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		allErrs = append(allErrs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return allErrs
}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		idxPath := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("operator"), t.Operator, supportedTolerationOps))
		}
		if t.Effect != "" && !slices.Contains(supportedTaintEffects, string(t.Effect)) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("effect"), t.Effect, supportedTaintEffects))
		}
	}
	return allErrs
}

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			allErrs = append(allErrs, validateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if term.Weight < 1 || term.Weight > 100 {
				allErrs = append(allErrs, field.Invalid(tp.Child("weight"), term.Weight, "must be in the range 1-100"))
			}
			allErrs = append(allErrs, validateNodeSelectorTerm(term.Preference, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		p := fldPath.Child("podAffinity")
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		allErrs = append(allErrs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		p := fldPath.Child("podAntiAffinity")
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		allErrs = append(allErrs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	return allErrs
}

func validateNodeSelector(ns *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(fldPath.Child("nodeSelectorTerms"), "must have at least one node selector term")}
	}
	var allErrs field.ErrorList
	for i, term := range ns.NodeSelectorTerms {
		allErrs = append(allErrs, validateNodeSelectorTerm(term, fldPath.Child("nodeSelectorTerms").Index(i))...)
	}
	return allErrs
}

func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, req := range term.MatchExpressions {
		p := fldPath.Child("matchExpressions").Index(i)
		allErrs = append(allErrs, validateNodeSelectorRequirement(req, p)...)
		allErrs = append(allErrs, metav1validation.ValidateLabelName(req.Key, p.Child("key"))...)
	}
	for i, req := range term.MatchFields {
		p := fldPath.Child("matchFields").Index(i)
		allErrs = append(allErrs, validateNodeSelectorRequirement(req, p)...)
		if req.Key != "metadata.name" {
			allErrs = append(allErrs, field.NotSupported(p.Child("key"), req.Key, []string{"metadata.name"}))
		}
	}
	return allErrs
}

func validateNodeSelectorRequirement(req corev1.NodeSelectorRequirement, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(req.Values) > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(req.Values) != 1 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("operator"), req.Operator, supportedNodeSelectorOps))
	}
	return allErrs
}

func validatePodAffinityTerms(terms []corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, term := range terms {
		allErrs = append(allErrs, validatePodAffinityTerm(term, fldPath.Index(i))...)
	}
	return allErrs
}

func validateWeightedPodAffinityTerms(terms []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, term := range terms {
		p := fldPath.Index(i)
		if term.Weight < 1 || term.Weight > 100 {
			allErrs = append(allErrs, field.Invalid(p.Child("weight"), term.Weight, "must be in the range 1-100"))
		}
		allErrs = append(allErrs, validatePodAffinityTerm(term.PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return allErrs
}

func validatePodAffinityTerm(term corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	opts := metav1validation.LabelSelectorValidationOptions{}
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(term.LabelSelector, opts, fldPath.Child("labelSelector"))...)
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	for _, ns := range term.Namespaces {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(ns, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("namespace"), ns, msg))
		}
	}
	if term.TopologyKey == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(term.TopologyKey, fldPath.Child("topologyKey"))...)
	}
	return allErrs
}

func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, c := range constraints {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, isNotPositiveErrorMsg))
		}
		if c.TopologyKey == "" {
			allErrs = append(allErrs, field.Required(p.Child("topologyKey"), "can not be empty"))
		} else {
			allErrs = append(allErrs, metav1validation.ValidateLabelName(c.TopologyKey, p.Child("topologyKey"))...)
		}
		if !slices.Contains(supportedUnsatisfiable, string(c.WhenUnsatisfiable)) {
			allErrs = append(allErrs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, supportedUnsatisfiable))
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), *c.MinDomains, isNotPositiveErrorMsg))
			} else if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"))
			}
		}
		key := c.TopologyKey + "\x00" + string(c.WhenUnsatisfiable)
		if seen.Has(key) {
			allErrs = append(allErrs, field.Duplicate(p, fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
		}
		seen.Insert(key)
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return allErrs
}

func validateReadinessGates(gates []corev1.PodReadinessGate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, g := range gates {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(string(g.ConditionType), fldPath.Index(i).Child("conditionType"))...)
	}
	return allErrs
}
