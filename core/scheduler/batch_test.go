package scheduler_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler"
)

// TestBatchingThroughTheScheduler: against a real API server, equal pods of a batching
// profile are bound, most of them placed from a kept ranking (each with its explanation),
// and a profile with batching: false never batches.
func TestBatchingThroughTheScheduler(t *testing.T) {
	c := newCluster(t, 5)
	s, _ := c.startScheduler(scheduler.Options{Config: []byte(`
scheduler:
  profiles:
  - schedulerName: default-scheduler
  - schedulerName: no-batch
    batching: false
`)})
	for i := range 20 {
		c.createPod(fmt.Sprintf("web-%d", i), requests("100m", "64Mi"), labels("app", "web"))
	}
	for i := range 5 {
		c.createPod(fmt.Sprintf("other-%d", i), requests("100m", "64Mi"), func(p *v1.Pod) { p.Spec.SchedulerName = "no-batch" })
	}
	for i := range 20 {
		p := c.waitPod(fmt.Sprintf("web-%d", i), "bound", bound)
		if p.Annotations[scheduler.ExplainAnnotation] == "" {
			t.Errorf("pod %s has no explanation", p.Name)
		}
	}
	for i := range 5 {
		c.waitPod(fmt.Sprintf("other-%d", i), "bound", bound)
	}
	m := scrape(t, s)
	reused := regexp.MustCompile(`scheduler_batch_attempts_total\{profile="default-scheduler",result="reused"\} (\d+)`).FindStringSubmatch(m)
	if reused == nil {
		t.Fatalf("no pod was placed from a kept ranking:\n%s", grepLines(m, "scheduler_batch_attempts_total"))
	}
	if n, _ := strconv.Atoi(reused[1]); n < 10 {
		t.Errorf("%d of 20 equal pods placed from a kept ranking:\n%s", n, grepLines(m, "scheduler_batch_attempts_total"))
	}
	if l := grepLines(m, `profile="no-batch"`); regexp.MustCompile(`scheduler_batch_attempts_total`).MatchString(l) {
		t.Errorf("the profile without batching batched:\n%s", l)
	}
}
