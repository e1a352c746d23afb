package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

type cluster struct {
	t      testing.TB
	srv    *apiservertest.Server
	client kubernetes.Interface
	ctx    context.Context
}

func testLogger() *slog.Logger {
	if os.Getenv("WASMKUBE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newCluster starts an API server and n hollow nodes.
func newCluster(t testing.TB, n int) *cluster {
	t.Helper()
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := rest.CopyConfig(srv.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, srv: srv, client: client, ctx: ctx}
	if n > 0 {
		c.hollow(ctx, n, "hollow-")
	}
	return c
}

func (c *cluster) hollow(ctx context.Context, n int, prefix string) {
	c.t.Helper()
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- hollow.Run(ctx, c.srv.Config, hollow.Options{Count: n, Prefix: prefix, Ready: ready, Logger: testLogger()})
	}()
	select {
	case <-ready:
	case err := <-errc:
		c.t.Fatalf("hollow nodes: %v", err)
	}
}

// startScheduler runs a scheduler until the test ends; config is a whole config file.
func (c *cluster) startScheduler(opts scheduler.Options) (*scheduler.Scheduler, context.CancelFunc) {
	c.t.Helper()
	// As the in-process scheduler of `wasmkube server`: system:kube-scheduler under RBAC.
	opts.RESTConfig = c.srv.SchedulerConfig(c.t)
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	ctx, cancel := context.WithCancel(c.ctx)
	s, err := scheduler.New(ctx, opts)
	if err != nil {
		cancel()
		c.t.Fatalf("scheduler.New: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			c.t.Logf("scheduler.Run: %v", err)
		}
	}()
	stop := func() { cancel(); <-done }
	c.t.Cleanup(stop)
	return s, stop
}

type podOpt func(*v1.Pod)

func requests(cpu, mem string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	}
}

func labels(kv ...string) podOpt {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

// priority gives the pod the PriorityClass prio-V (the Priority admission plugin turns it
// into spec.priority; a pod may not set the number itself). priorityClass creates it.
func priority(v int32) podOpt {
	return func(p *v1.Pod) { p.Spec.PriorityClassName = fmt.Sprintf("prio-%d", v) }
}

func (c *cluster) createPod(name string, opts ...podOpt) *v1.Pod {
	c.t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
	for _, o := range opts {
		o(p)
	}
	created, err := c.client.CoreV1().Pods("default").Create(c.ctx, p, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("create pod %s: %v", name, err)
	}
	return created
}

// waitPod polls until cond holds for the pod (or fails the test after a minute).
func (c *cluster) waitPod(name string, what string, cond func(*v1.Pod) bool) *v1.Pod {
	c.t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		c.t.Fatalf("pod %s: waiting for %s: %v (last: node=%q phase=%s conditions=%+v)", name, what, err, nodeOf(last), phaseOf(last), condsOf(last))
	}
	return last
}

func nodeOf(p *v1.Pod) string {
	if p == nil {
		return ""
	}
	return p.Spec.NodeName
}
func phaseOf(p *v1.Pod) v1.PodPhase {
	if p == nil {
		return ""
	}
	return p.Status.Phase
}
func condsOf(p *v1.Pod) []v1.PodCondition {
	if p == nil {
		return nil
	}
	return p.Status.Conditions
}

func bound(p *v1.Pod) bool { return p.Spec.NodeName != "" }

func unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

func schedMessage(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

// events returns the messages of events of a reason about a pod.
func (c *cluster) events(pod, reason string) []string {
	c.t.Helper()
	list, err := c.client.CoreV1().Events("default").List(c.ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod}.String()})
	if err != nil {
		c.t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason && e.InvolvedObject.Name == pod {
			out = append(out, e.Message)
		}
	}
	return out
}

func (c *cluster) waitEvent(pod, reason, contains string) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, m := range c.events(pod, reason) {
			if strings.Contains(m, contains) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("no %s event for pod %s containing %q; have %q", reason, pod, contains, c.events(pod, reason))
	}
}

func explanation(t *testing.T, p *v1.Pod) *runtime.Explanation {
	t.Helper()
	raw, ok := p.Annotations[scheduler.ExplainAnnotation]
	if !ok {
		return nil
	}
	var e runtime.Explanation
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		t.Fatalf("explanation of %s: %v", p.Name, err)
	}
	return &e
}

func TestScheduleRunAndInsufficientCPU(t *testing.T) {
	c := newCluster(t, 3)
	c.startScheduler(scheduler.Options{})

	c.createPod("small", requests("100m", "128Mi"))
	p := c.waitPod("small", "Running on a hollow node", func(p *v1.Pod) bool { return bound(p) && p.Status.Phase == v1.PodRunning })
	if !strings.HasPrefix(p.Spec.NodeName, "hollow-") || p.Status.PodIP == "" {
		t.Fatalf("pod small: node %q podIP %q, want a hollow node and an IP", p.Spec.NodeName, p.Status.PodIP)
	}
	c.waitEvent("small", "Scheduled", "Successfully assigned default/small to "+p.Spec.NodeName)

	c.createPod("huge", requests("5", "1Gi"))
	p = c.waitPod("huge", "PodScheduled=False Unschedulable", unschedulable)
	want := "0/3 nodes are available: 3 Insufficient cpu."
	if !strings.HasPrefix(schedMessage(p), want) {
		t.Fatalf("pod huge: condition message %q, want prefix %q", schedMessage(p), want)
	}
	c.waitEvent("huge", "FailedScheduling", want)
	p = c.waitPod("huge", "an explanation", func(p *v1.Pod) bool { return podExplanation(t, c.client, p) != nil })
	e := podExplanation(t, c.client, p)
	if e.Result != "Unschedulable" || e.Nodes != 3 || len(e.RejectCounts) != 1 ||
		e.RejectCounts[0] != (runtime.RejectCount{Plugin: "NodeResourcesFit", Reason: "Insufficient cpu", Count: 3}) {
		t.Fatalf("explanation of huge: %+v", e)
	}
}
