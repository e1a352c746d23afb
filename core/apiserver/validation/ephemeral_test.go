package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
)

// debugger is an ephemeral container as `kubectl debug -it --target=app` makes it, defaulted
// as the API server defaults it.
func debugger(name string) corev1.EphemeralContainer {
	p := &corev1.Pod{Spec: corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1.36", Stdin: true, TTY: true,
			Command: []string{"sh"}},
		TargetContainerName: "app",
	}}}}
	defaults.Default(p)
	return p.Spec.EphemeralContainers[0]
}

func TestEphemeralContainersUpdate(t *testing.T) {
	ec := "spec.ephemeralContainers"
	tests := []struct {
		name   string
		old    []corev1.EphemeralContainer // the stored pod's
		mutate func(p *corev1.Pod)
		want   []want
	}{
		{"first one added", nil, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("debugger"))
		}, nil},
		{"another added, the first kept", []corev1.EphemeralContainer{debugger("d1")}, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("d2"))
		}, nil},
		{"without a target", nil, func(p *corev1.Pod) {
			d := debugger("debugger")
			d.TargetContainerName = ""
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, nil},
		{"volume mount and security context allowed", nil, func(p *corev1.Pod) {
			d := debugger("debugger")
			d.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			d.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, nil},
		{"no change", []corev1.EphemeralContainer{debugger("d1")}, func(p *corev1.Pod) {}, nil},

		{"name of an app container", nil, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("app"))
		}, []want{{field.ErrorTypeDuplicate, ec + "[0].name", ""}}},
		{"name of an init container", nil, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("init"))
		}, []want{{field.ErrorTypeDuplicate, ec + "[0].name", ""}}},
		{"name of another ephemeral container", []corev1.EphemeralContainer{debugger("d1")}, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("d1"))
		}, []want{{field.ErrorTypeDuplicate, ec + "[1].name", ""}}},
		{"no name", nil, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger(""))
		}, []want{{field.ErrorTypeRequired, ec + "[0].name", ""}}},
		{"no image", nil, func(p *corev1.Pod) {
			d := debugger("debugger")
			d.Image = ""
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, []want{{field.ErrorTypeRequired, ec + "[0].image", ""}}},
		{"unknown target", nil, func(p *corev1.Pod) {
			d := debugger("debugger")
			d.TargetContainerName = "nope"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, []want{{field.ErrorTypeNotFound, ec + "[0].targetContainerName", ""}}},
		{"target is an ephemeral container", []corev1.EphemeralContainer{debugger("d1")}, func(p *corev1.Pod) {
			d := debugger("d2")
			d.TargetContainerName = "d1"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, []want{{field.ErrorTypeNotFound, ec + "[1].targetContainerName", ""}}},
		{"ports, probe, lifecycle and resources refused, each by name", nil, func(p *corev1.Pod) {
			d := debugger("debugger")
			d.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
			d.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
			d.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
			d.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, []want{
			{field.ErrorTypeForbidden, ec + "[0].ports", "cannot be set for an Ephemeral Container"},
			{field.ErrorTypeForbidden, ec + "[0].readinessProbe", "cannot be set for an Ephemeral Container"},
			{field.ErrorTypeForbidden, ec + "[0].lifecycle", "cannot be set for an Ephemeral Container"},
			{field.ErrorTypeForbidden, ec + "[0].resources", "cannot be set for an Ephemeral Container"},
		}},
		{"subPath refused", nil, func(p *corev1.Pod) {
			d := debugger("debugger")
			d.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "x"}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, []want{{field.ErrorTypeForbidden, ec + "[0].volumeMounts[0].subPath", "cannot be set for an Ephemeral Container"}}},
		{"mount of a missing volume", nil, func(p *corev1.Pod) {
			d := debugger("debugger")
			d.VolumeMounts = []corev1.VolumeMount{{Name: "gone", MountPath: "/gone"}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, []want{{field.ErrorTypeNotFound, ec + "[0].volumeMounts[0].name", ""}}},
		{"existing one removed", []corev1.EphemeralContainer{debugger("d1")}, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = nil
		}, []want{{field.ErrorTypeForbidden, ec, `existing ephemeral containers "d1" may not be removed`}}},
		{"existing one changed", []corev1.EphemeralContainer{debugger("d1")}, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers[0].Image = "busybox:1.37"
		}, []want{{field.ErrorTypeForbidden, ec, `existing ephemeral containers "d1" may not be changed`}}},
		{"static pod", nil, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("debugger"))
		}, nil}, // the annotation is set on old below
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validPod()
			old.ResourceVersion = "5"
			old.Spec.EphemeralContainers = tt.old
			wants := tt.want
			if tt.name == "static pod" {
				old.Annotations = map[string]string{mirrorPodAnnotation: "x"}
				wants = []want{{field.ErrorTypeForbidden, "metadata.annotations[kubernetes.io/config.mirror]", "static pods do not support ephemeral containers"}}
			}
			pod := old.DeepCopy()
			tt.mutate(pod)
			checkErrors(t, ValidateEphemeralContainersUpdate(pod, old), wants)
		})
	}
}

// Ephemeral containers come only through the subresource: not on create, not in a
// template, not by an ordinary pod update.
func TestEphemeralContainersElsewhere(t *testing.T) {
	pod := validPod()
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("debugger")}
	checkErrors(t, Validate(pod), []want{{field.ErrorTypeForbidden, "spec.ephemeralContainers", "cannot have ephemeral containers on create"}})

	d := validDeployment()
	d.Spec.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("debugger")}
	checkErrors(t, Validate(d), []want{{field.ErrorTypeForbidden, "spec.template.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"}})

	old := validPod()
	old.ResourceVersion = "5"
	pod.ResourceVersion = "5"
	checkErrors(t, ValidateUpdate(pod, old), []want{{field.ErrorTypeForbidden, "spec", "pod updates may not change fields other than"}})
}
