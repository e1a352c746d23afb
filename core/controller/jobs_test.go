package controller_test

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/controller"
	"github.com/wasmkube/wasmkube/core/controller/job"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

// kubectlFor runs the real kubectl against the test server and fails the test on error.
func kubectlFor(t *testing.T, e *env) func(args ...string) string {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for this test (it is installed on wasmkube's machines): %v", err)
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(e.ctx, kubectl, append([]string{"--kubeconfig", e.srv.KubeconfigPath}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

func (e *env) jobPods(name string) []corev1.Pod {
	pods, err := e.client.CoreV1().Pods("default").List(e.ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	return pods.Items
}

func jobCond(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == t && j.Status.Conditions[i].Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func (e *env) waitJob(name string, t batchv1.JobConditionType) *batchv1.Job {
	e.t.Helper()
	var j *batchv1.Job
	e.eventually("job "+name+" "+string(t), func() (bool, error) {
		var err error
		j, err = e.client.BatchV1().Jobs("default").Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return jobCond(j, t) != nil, fmt.Errorf("status %+v", j.Status)
	})
	return j
}

func TestJobs(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 3, ctrl: &controller.Options{Workers: 4, JobBackoff: 50 * time.Millisecond}})
	kubectl := kubectlFor(t, e)

	t.Run("kubectl create job completes", func(t *testing.T) {
		kubectl("create", "job", "pi", "--image=busybox", "--", "true")
		if out := kubectl("wait", "--for=condition=Complete", "job/pi", "--timeout=120s"); !strings.Contains(out, "condition met") {
			t.Fatalf("wait: %s", out)
		}
		j := e.waitJob("pi", batchv1.JobComplete)
		if j.Status.Succeeded != 1 || j.Status.Failed != 0 || j.Status.Active != 0 || j.Status.CompletionTime == nil {
			t.Errorf("status %+v", j.Status)
		}
		if out := kubectl("get", "job", "pi", "--no-headers"); !strings.Contains(out, "Complete") || !strings.Contains(out, "1/1") {
			t.Errorf("kubectl get job: %q", out)
		}
		// The finished pod stays (for its logs), without the tracking finalizer.
		pods := e.jobPods("pi")
		if len(pods) != 1 || pods[0].Status.Phase != corev1.PodSucceeded || len(pods[0].Finalizers) != 0 {
			t.Errorf("pods: %d %+v", len(pods), pods)
		}
	})

	t.Run("completions and parallelism", func(t *testing.T) {
		j := newJob("many", 5, 2)
		if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := e.waitJob("many", batchv1.JobComplete)
		if got.Status.Succeeded != 5 {
			t.Errorf("succeeded %d, want 5", got.Status.Succeeded)
		}
		if n := len(e.jobPods("many")); n != 5 {
			t.Errorf("%d pods, want exactly 5", n)
		}
	})

	t.Run("failing pods reach the backoff limit", func(t *testing.T) {
		j := newJob("fails", 1, 1)
		j.Spec.BackoffLimit = ptrTo(int32(2))
		j.Spec.Template.Spec.Containers[0].Command = []string{"false"}
		if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := e.waitJob("fails", batchv1.JobFailed)
		c := jobCond(got, batchv1.JobFailed)
		if c.Reason != job.ReasonBackoffLimitExceeded || got.Status.Failed != 3 || got.Status.Succeeded != 0 {
			t.Errorf("failed condition %+v, status failed=%d succeeded=%d", c, got.Status.Failed, got.Status.Succeeded)
		}
		if n := len(e.jobPods("fails")); n != 3 {
			t.Errorf("%d pods, want 3 (backoffLimit 2 + the first)", n)
		}
		if out := kubectl("get", "job", "fails", "--no-headers"); !strings.Contains(out, "Failed") {
			t.Errorf("kubectl get job: %q", out)
		}
	})

	t.Run("pod failure policy fails the job at once", func(t *testing.T) {
		j := newJob("pfp", 1, 1)
		j.Spec.Template.Annotations = map[string]string{hollow.ExitCodeAnnotation: "42"}
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
		}}}
		if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := e.waitJob("pfp", batchv1.JobFailed)
		if c := jobCond(got, batchv1.JobFailed); c.Reason != job.ReasonPodFailurePolicy || !strings.Contains(c.Message, "exit code 42") {
			t.Errorf("failed condition %+v", c)
		}
		if n := len(e.jobPods("pfp")); n != 1 {
			t.Errorf("%d pods, want 1 (no retry after FailJob)", n)
		}
	})

	t.Run("indexed job", func(t *testing.T) {
		j := newJob("idx", 4, 2)
		mode := batchv1.IndexedCompletion
		j.Spec.CompletionMode = &mode
		if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := e.waitJob("idx", batchv1.JobComplete)
		if got.Status.CompletedIndexes != "0-3" || got.Status.Succeeded != 4 {
			t.Errorf("completedIndexes %q succeeded %d", got.Status.CompletedIndexes, got.Status.Succeeded)
		}
		var idx []string
		for _, p := range e.jobPods("idx") {
			ix := p.Annotations[job.CompletionIndexAnnotation]
			idx = append(idx, ix)
			if p.Labels[job.CompletionIndexLabel] != ix || p.Spec.Hostname != "idx-"+ix || !strings.HasPrefix(p.Name, "idx-"+ix+"-") {
				t.Errorf("pod %s: label %q hostname %q", p.Name, p.Labels[job.CompletionIndexLabel], p.Spec.Hostname)
			}
			env := p.Spec.Containers[0].Env
			if len(env) == 0 || env[len(env)-1].Name != job.CompletionIndexEnv || env[len(env)-1].ValueFrom == nil ||
				env[len(env)-1].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
				t.Errorf("pod %s env %+v", p.Name, env)
			}
		}
		sort.Strings(idx)
		if strings.Join(idx, ",") != "0,1,2,3" {
			t.Errorf("pod indexes %v", idx)
		}
	})

	t.Run("active deadline", func(t *testing.T) {
		j := newJob("slow", 1, 1)
		j.Spec.ActiveDeadlineSeconds = ptrTo(int64(1))
		j.Spec.Template.Annotations = map[string]string{hollow.RunSecondsAnnotation: "600"}
		if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := e.waitJob("slow", batchv1.JobFailed)
		if c := jobCond(got, batchv1.JobFailed); c.Reason != job.ReasonDeadlineExceeded {
			t.Errorf("failed condition %+v", c)
		}
		// The running pod it deleted counts as failed, as upstream reports it.
		if got.Status.Failed != 1 || got.Status.Active != 0 {
			t.Errorf("status failed=%d active=%d, want 1 and 0", got.Status.Failed, got.Status.Active)
		}
		e.eventually("the running pod deleted", func() (bool, error) {
			n := len(e.jobPods("slow"))
			return n == 0, fmt.Errorf("%d pods", n)
		})
	})

	t.Run("suspend and resume", func(t *testing.T) {
		j := newJob("susp", 1, 1)
		j.Spec.Suspend = ptrTo(true)
		if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitJob("susp", batchv1.JobSuspended)
		if n := len(e.jobPods("susp")); n != 0 {
			t.Errorf("suspended job has %d pods", n)
		}
		kubectl("patch", "job", "susp", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
		e.waitJob("susp", batchv1.JobComplete)
	})

	t.Run("ttl after finished", func(t *testing.T) {
		j := newJob("ttl", 1, 1)
		j.Spec.TTLSecondsAfterFinished = ptrTo(int32(0))
		if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually("job and pods deleted", func() (bool, error) {
			_, err := e.client.BatchV1().Jobs("default").Get(e.ctx, "ttl", metav1.GetOptions{})
			n := len(e.jobPods("ttl"))
			return err != nil && n == 0, fmt.Errorf("get: %v, %d pods", err, n)
		})
	})
}

func ptrTo[T any](v T) *T { return &v }

func newJob(name string, completions, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{
			Completions: &completions, Parallelism: &parallelism,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "work", Image: "busybox:1", Command: []string{"true"}}},
			}},
		},
	}
}
