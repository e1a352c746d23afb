package quota

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestPodUsageAndExceeded(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("cpu", "200m")}},
			{Resources: corev1.ResourceRequirements{Requests: rl("cpu", "50m", "memory", "10Mi")}},
		},
		InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: rl("cpu", "500m")}}},
	}}
	u := PodUsage(pod)
	for name, want := range map[string]string{"pods": "1", "count/pods": "1", "requests.cpu": "500m", "cpu": "500m", "requests.memory": "10Mi", "limits.cpu": "200m"} {
		if q := u[corev1.ResourceName(name)]; q.String() != want {
			t.Errorf("usage %s = %s, want %s", name, q.String(), want)
		}
	}
	hard := rl("pods", "2", "requests.cpu", "1")
	if got := Exceeded(hard, rl("pods", "1", "requests.cpu", "400m"), u); len(got) != 0 {
		t.Errorf("exceeded %v within the quota", got)
	}
	if got := Exceeded(hard, rl("pods", "2", "requests.cpu", "600m"), u); !reflect.DeepEqual(got, []corev1.ResourceName{"pods", "requests.cpu"}) {
		t.Errorf("exceeded %v, want pods and requests.cpu", got)
	}
	if got := MissingRequests(pod, rl("requests.memory", "1Gi", "limits.cpu", "1")); !reflect.DeepEqual(got, []corev1.ResourceName{"limits.cpu", "requests.memory"}) {
		t.Errorf("missing %v", got)
	}
	pod.Status.Phase = corev1.PodSucceeded
	if u := PodUsage(pod); len(u) != 0 {
		t.Errorf("a finished pod uses %v", u)
	}
}
