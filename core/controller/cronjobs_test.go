package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wasmkube/wasmkube/core/controller"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

func (e *env) cronJobs(cj string) map[string]*batchv1.Job {
	list, err := e.client.BatchV1().Jobs("default").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]*batchv1.Job{}
	for i := range list.Items {
		j := &list.Items[i]
		if ref := metav1.GetControllerOf(j); ref != nil && ref.Kind == "CronJob" && ref.Name == cj && j.DeletionTimestamp == nil {
			out[j.Name] = j
		}
	}
	return out
}

func (e *env) lastSchedule(cj string) time.Time {
	c, err := e.client.BatchV1().CronJobs("default").Get(e.ctx, cj, metav1.GetOptions{})
	if err != nil || c.Status.LastScheduleTime == nil {
		return time.Time{}
	}
	return c.Status.LastScheduleTime.Time
}

// CronJobs run on a fake clock that the test steps a minute at a time: no test sleeps
// for a schedule.
func TestCronJobs(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, envOpts{nodes: 2, ctrl: &controller.Options{Workers: 4, Clock: clk}})
	kubectl := kubectlFor(t, e)
	// nextMinute steps the clock to just past the next whole minute and returns that minute.
	// The API server stamps creation times with the real clock, so the next minute is taken
	// after both clocks.
	later := func() time.Time {
		if now := time.Now(); now.After(clk.Now()) {
			return now
		}
		return clk.Now()
	}
	nextMinute := func() time.Time {
		m := later().Truncate(time.Minute).Add(time.Minute)
		clk.SetTime(m.Add(time.Second))
		return m
	}

	kubectl("create", "cronjob", "tick", "--image=busybox", "--schedule=* * * * *", "--", "true")
	kubectl("patch", "cronjob", "tick", "--type=merge", "-p", `{"spec":{"successfulJobsHistoryLimit":2}}`)
	var names []string
	for i := 0; i < 3; i++ {
		m := nextMinute()
		name := fmt.Sprintf("tick-%d", m.Unix()/60)
		names = append(names, name)
		e.eventually("job "+name+" complete", func() (bool, error) {
			j := e.cronJobs("tick")[name]
			return j != nil && jobCond(j, batchv1.JobComplete) != nil && e.lastSchedule("tick").Equal(m), fmt.Errorf("jobs %v", keys(e.cronJobs("tick")))
		})
		if j := e.cronJobs("tick")[name]; j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "" {
			t.Errorf("job %s lacks the scheduled timestamp: %v", name, j.Annotations)
		}
	}
	// The history limit keeps the two newest successful Jobs.
	e.eventually("history limit", func() (bool, error) {
		jobs := e.cronJobs("tick")
		return len(jobs) == 2 && jobs[names[0]] == nil, fmt.Errorf("jobs %v", keys(jobs))
	})
	if out := kubectl("get", "cronjob", "tick", "--no-headers"); !strings.Contains(out, "* * * * *") || !strings.Contains(out, "False") {
		t.Errorf("kubectl get cronjob: %q", out)
	}
	// Suspended: the next minute creates nothing.
	kubectl("patch", "cronjob", "tick", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	e.eventually("suspend observed", func() (bool, error) {
		out := kubectl("get", "cronjob", "tick", "-o", "jsonpath={.spec.suspend}")
		return out == "true", nil
	})

	// Forbid: a Job still running keeps the next one from starting; Replace swaps it.
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: "default"},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{Spec: newJob("x", 1, 1).Spec}},
	}
	cj.Spec.JobTemplate.Spec.Template.Annotations = map[string]string{hollow.RunSecondsAnnotation: "3600"}
	// Half a minute past the last schedule, and a starting deadline shorter than that: the
	// minutes between the CronJob's (real) creation time and the fake clock are not due.
	clk.SetTime(later().Truncate(time.Minute).Add(30 * time.Second))
	cj.Spec.StartingDeadlineSeconds = ptrTo(int64(10))
	if _, err := e.client.BatchV1().CronJobs("default").Create(e.ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := nextMinute()
	firstName := fmt.Sprintf("long-%d", first.Unix()/60)
	e.eventually("first long job", func() (bool, error) {
		return e.cronJobs("long")[firstName] != nil && e.lastSchedule("long").Equal(first), fmt.Errorf("jobs %v", keys(e.cronJobs("long")))
	})
	second := nextMinute()
	e.eventually("JobAlreadyActive event", func() (bool, error) {
		evs, err := e.client.CoreV1().Events("default").List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=long,reason=JobAlreadyActive"})
		if err != nil {
			return false, err
		}
		return len(evs.Items) > 0, nil
	})
	if jobs := e.cronJobs("long"); len(jobs) != 1 || !e.lastSchedule("long").Equal(first) {
		t.Fatalf("Forbid started a second job: %v", keys(jobs))
	}
	kubectl("patch", "cronjob", "long", "--type=merge", "-p", `{"spec":{"concurrencyPolicy":"Replace"}}`)
	e.eventually("replaced", func() (bool, error) {
		jobs := e.cronJobs("long")
		_, gotFirst := jobs[firstName]
		return !gotFirst && len(jobs) == 1 && e.lastSchedule("long").Equal(second), fmt.Errorf("jobs %v", keys(jobs))
	})
	if jobs := e.cronJobs("tick"); len(jobs) != 2 {
		t.Errorf("suspended cronjob made jobs: %v", keys(jobs))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
