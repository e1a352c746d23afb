package job

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestIndexes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 5, ""}, {"0-2,4", 5, "0-2,4"}, {"4,0,1,2", 5, "0-2,4"}, {"0-9", 3, "0-2"}, {"x,1,3-y", 5, "1"}, {"1,1,2", 5, "1-2"},
	} {
		if got := ParseIndexes(c.in, c.n).String(); got != c.want {
			t.Errorf("ParseIndexes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	if got := ParseIndexes("0,2", 5).With(1).String(); got != "0-2" {
		t.Errorf("With: %q", got)
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second} {
		if got := Backoff(int32(failures), 10*time.Second, 6*time.Minute); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", failures, got, want)
		}
	}
	if got := Backoff(30, 10*time.Second, 6*time.Minute); got != 6*time.Minute {
		t.Errorf("Backoff(30) = %s, want the cap", got)
	}
}

func pod(name string, phase corev1.PodPhase, finalizer bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}, Status: corev1.PodStatus{Phase: phase}}
	if finalizer {
		p.Finalizers = []string{TrackingFinalizer}
	}
	return p
}

// A finished pod is counted in three steps: recorded as uncounted (its finalizer released
// after that status is stored), then counted once the finalizer is gone; never twice.
func TestPlanCountsOnce(t *testing.T) {
	c, par := int32(2), int32(1)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}, Spec: batchv1.JobSpec{Completions: &c, Parallelism: &par}}
	now := time.Now()
	o := Options{BackoffBase: time.Second, BackoffMax: time.Minute}
	done := pod("a", corev1.PodSucceeded, true)
	d := Plan(job, []*corev1.Pod{done}, now, o)
	if d.Status.Succeeded != 0 || len(d.Status.UncountedTerminatedPods.Succeeded) != 1 || len(d.Release) != 1 || len(d.Create) != 1 {
		t.Fatalf("first pass: %+v release=%d create=%v", d.Status, len(d.Release), d.Create)
	}
	// The informer still shows the finalizer: recorded, not counted again.
	job.Status = d.Status
	d = Plan(job, []*corev1.Pod{done}, now, o)
	if d.Status.Succeeded != 0 || len(d.Status.UncountedTerminatedPods.Succeeded) != 1 {
		t.Fatalf("second pass: %+v", d.Status)
	}
	// Finalizer gone: counted.
	job.Status = d.Status
	d = Plan(job, []*corev1.Pod{pod("a", corev1.PodSucceeded, false)}, now, o)
	if d.Status.Succeeded != 1 || len(d.Status.UncountedTerminatedPods.Succeeded) != 0 {
		t.Fatalf("third pass: %+v", d.Status)
	}
	// The pod is garbage collected: the count stays.
	job.Status = d.Status
	d = Plan(job, nil, now, o)
	if d.Status.Succeeded != 1 || len(d.Create) != 1 {
		t.Fatalf("after the pod went: %+v create=%v", d.Status, d.Create)
	}
}

func TestPlanBackoffDelaysReplacement(t *testing.T) {
	c, par, limit := int32(1), int32(1), int32(3)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: batchv1.JobSpec{Completions: &c, Parallelism: &par, BackoffLimit: &limit}}
	now := time.Now()
	failed := pod("a", corev1.PodFailed, false)
	failed.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(now)}}}}
	job.Status.Failed = 2
	d := Plan(job, []*corev1.Pod{failed}, now.Add(time.Second), Options{BackoffBase: time.Second, BackoffMax: time.Minute})
	if len(d.Create) != 0 || d.RequeueAfter != time.Second {
		t.Fatalf("within the back-off (2 s after 2 failures): create=%v requeue=%s", d.Create, d.RequeueAfter)
	}
	d = Plan(job, []*corev1.Pod{failed}, now.Add(2*time.Second), Options{BackoffBase: time.Second, BackoffMax: time.Minute})
	if len(d.Create) != 1 {
		t.Fatalf("after the back-off: create=%v", d.Create)
	}
}

// A Job past activeDeadlineSeconds deletes its running pods and counts them as failed, as
// upstream does, before it reports Failed with reason DeadlineExceeded; a suspended Job's
// deleted pods are not failures.
func TestPlanDeadlineCountsDeletedPodsAsFailed(t *testing.T) {
	c, par, ads := int32(2), int32(2), int64(5)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: batchv1.JobSpec{Completions: &c, Parallelism: &par, ActiveDeadlineSeconds: &ads}}
	start := time.Now()
	job.Status.StartTime = &metav1.Time{Time: start}
	o := Options{BackoffBase: time.Second, BackoffMax: time.Minute}
	running := []*corev1.Pod{pod("a", corev1.PodRunning, true), pod("b", corev1.PodRunning, true)}
	now := start.Add(6 * time.Second)

	d := Plan(job, running, now, o)
	target := condition(&d.Status, batchv1.JobFailureTarget)
	if !isTrue(target) || target.Reason != ReasonDeadlineExceeded || len(d.Delete) != 2 || isTrue(condition(&d.Status, batchv1.JobFailed)) {
		t.Fatalf("past the deadline: target %+v delete=%d status %+v", target, len(d.Delete), d.Status)
	}
	// The deletions land: both pods terminate, still with the finalizer, and are recorded
	// as failed (then released); not yet Failed.
	job.Status = d.Status
	del := metav1.NewTime(now)
	for _, p := range running {
		p.DeletionTimestamp = &del
	}
	d = Plan(job, running, now, o)
	if got := d.Status.UncountedTerminatedPods.Failed; len(got) != 2 || len(d.Release) != 2 {
		t.Fatalf("terminating pods: uncounted failed %v, release %d", got, len(d.Release))
	}
	if isTrue(condition(&d.Status, batchv1.JobFailed)) {
		t.Fatal("Failed before the pods were counted")
	}
	// Finalizers gone, pods gone: counted, and the Job is Failed.
	job.Status = d.Status
	d = Plan(job, nil, now, o)
	failed := condition(&d.Status, batchv1.JobFailed)
	if d.Status.Failed != 2 || !isTrue(failed) || failed.Reason != ReasonDeadlineExceeded {
		t.Fatalf("final: failed=%d condition %+v", d.Status.Failed, failed)
	}

	// Suspension deletes pods without counting them.
	susp := true
	job2 := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
		Spec: batchv1.JobSpec{Completions: &c, Parallelism: &par, Suspend: &susp}}
	gone := []*corev1.Pod{pod("c", corev1.PodRunning, true)}
	gone[0].DeletionTimestamp = &del
	d = Plan(job2, gone, now, o)
	if len(d.Status.UncountedTerminatedPods.Failed) != 0 || d.Status.Failed != 0 || len(d.Release) != 1 {
		t.Fatalf("suspended: %+v release %d", d.Status, len(d.Release))
	}
}
