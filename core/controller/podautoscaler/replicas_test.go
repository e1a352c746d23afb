package podautoscaler

import (
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func pod(name string, ready bool, cpuReq string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if cpuReq != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq)}
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

func pods(n int, ready bool) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, pod(fmt.Sprintf("p%d", i), ready, "100m"))
	}
	return out
}

var util50 = autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}

// TestResourceReplicas follows upstream's replica calculator cases: the ratio of usage to
// target times the pods, the tolerance, and how missing and unready pods count.
func TestResourceReplicas(t *testing.T) {
	cases := []struct {
		name    string
		current int32
		pods    []*corev1.Pod
		usage   PodUsage
		want    int32
		util    int32
	}{
		{"scale up 4x", 1, pods(1, true), PodUsage{"p0": 200}, 4, 200},
		{"scale down", 4, pods(4, true), PodUsage{"p0": 10, "p1": 10, "p2": 10, "p3": 10}, 1, 10},
		{"within tolerance above", 3, pods(3, true), PodUsage{"p0": 54, "p1": 54, "p2": 54}, 3, 54},
		{"within tolerance below", 3, pods(3, true), PodUsage{"p0": 46, "p1": 46, "p2": 46}, 3, 46},
		{"rounds up", 2, pods(2, true), PodUsage{"p0": 80, "p1": 70}, 3, 75},
		// Scaling up, a pod without a metric counts as using nothing: (200+0)/2 = 100% of
		// request = 2x the target over 2 pods -> 4.
		{"missing pod on scale up", 2, pods(2, true), PodUsage{"p0": 200}, 4, 200},
		// Scaling down, a pod without a metric counts as using its whole request: (10+100)/2
		// = 55%, within the tolerance of 50%: no change.
		{"missing pod on scale down", 2, pods(2, true), PodUsage{"p0": 10}, 2, 10},
		// An unready pod's metric is ignored when scaling up and the pod counts as using nothing.
		{"unready pod on scale up", 2, append(pods(1, true), pod("u", false, "100m")), PodUsage{"p0": 200, "u": 900}, 4, 200},
	}
	for _, c := range cases {
		r, err := ResourceReplicas(c.current, c.pods, c.usage, corev1.ResourceCPU, util50)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if r.Replicas != c.want || r.Utilization == nil || *r.Utilization != c.util {
			t.Errorf("%s: replicas %d utilization %v; want %d, %d", c.name, r.Replicas, ptr.Deref(r.Utilization, -1), c.want, c.util)
		}
	}
	// A pod without a CPU request cannot be measured against a utilization target.
	if _, err := ResourceReplicas(1, []*corev1.Pod{pod("norequest", true, "")}, PodUsage{"norequest": 10}, corev1.ResourceCPU, util50); err == nil {
		t.Error("a pod without a request: no error")
	}
	if _, err := ResourceReplicas(1, pods(1, true), PodUsage{}, corev1.ResourceCPU, util50); err == nil {
		t.Error("no metrics at all: no error")
	}
	// AverageValue: 300m per pod against 100m over 2 pods -> 6.
	av := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("100m"))}
	if r, err := ResourceReplicas(2, pods(2, true), PodUsage{"p0": 300, "p1": 300}, corev1.ResourceCPU, av); err != nil || r.Replicas != 6 || r.AverageMilli != 300 {
		t.Errorf("average value: %+v, %v", r, err)
	}
}

func TestStabilizeAndBounds(t *testing.T) {
	now := time.Unix(10000, 0)
	recs := []timestamped{{now.Add(-200 * time.Second), 6}, {now.Add(-400 * time.Second), 9}}
	// Scale down takes the highest recommendation of the window: 6 (9 is older than 300 s).
	if got := Stabilize(recs, 2, 8, now, 0, 300*time.Second); got != 6 {
		t.Errorf("stabilized scale down = %d, want 6", got)
	}
	// With no window the recommendation applies at once.
	if got := Stabilize(recs, 2, 8, now, 0, 0); got != 2 {
		t.Errorf("scale down without a window = %d, want 2", got)
	}
	// Scaling up is not held back by the default zero window.
	if got := Stabilize(recs, 12, 8, now, 0, 300*time.Second); got != 12 {
		t.Errorf("scale up = %d, want 12", got)
	}
	b := DefaultBehavior(nil)
	// Up: at most max(4 pods, 100%) per 15 s: from 2, 6 at most.
	if got, why := Bounds(20, 2, 1, 50, b, nil, now); got != 6 || why != "ScaleUpLimit" {
		t.Errorf("scale-up limit = %d %s, want 6 ScaleUpLimit", got, why)
	}
	// ... less what was already added within the period: 6 after +4 from 2 allows 10 more? No:
	// the period started at 2, so 2+4=6 or 2*2=4 -> 6, no further.
	if got, _ := Bounds(20, 6, 1, 50, b, []timestamped{{now.Add(-5 * time.Second), 4}}, now); got != 6 {
		t.Errorf("scale-up within the period = %d, want 6", got)
	}
	if got, why := Bounds(9, 8, 1, 5, b, nil, now); got != 5 || why != "TooManyReplicas" {
		t.Errorf("max bound = %d %s", got, why)
	}
	if got, why := Bounds(0, 3, 2, 5, b, nil, now); got != 2 || why != "TooFewReplicas" {
		t.Errorf("min bound = %d %s", got, why)
	}
	if got, why := Bounds(4, 3, 1, 5, b, nil, now); got != 4 || why != "" {
		t.Errorf("within range = %d %q", got, why)
	}
}
