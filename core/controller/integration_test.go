package controller_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/controller"
	"github.com/wasmkube/wasmkube/core/controller/deployment"
	"github.com/wasmkube/wasmkube/core/leaderelect"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

// waitTimeout bounds every wait: generous, because a test waits for behaviour, not speed.
const waitTimeout = 2 * time.Minute

func testLogger() *slog.Logger {
	if os.Getenv("WASMKUBE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type env struct {
	t      testing.TB
	wg     *sync.WaitGroup // every goroutine of the test; waited for after ctx is cancelled
	srv    *apiservertest.Server
	client kubernetes.Interface
	ctx    context.Context
}

type envOpts struct {
	nodes         int
	leaseInterval time.Duration
	toleration    int64
	ctrl          *controller.Options // nil: no controller manager
}

// newEnv starts a real API server, hollow nodes, the scheduler and (unless ctrl is nil)
// the controller manager, all stopped when the test ends.
func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	var sopts []apiservertest.Option
	if o.toleration > 0 {
		sopts = append(sopts, apiservertest.WithDefaultTolerationSeconds(o.toleration))
	}
	srv := apiservertest.Start(t, sopts...)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	e := &env{t: t, wg: &wg, srv: srv, client: srv.Client, ctx: ctx}
	t.Cleanup(func() { cancel(); wg.Wait() })
	if o.nodes > 0 {
		e.hollow(ctx, &wg, o.nodes, "hollow-", o.leaseInterval)
	}
	// The scheduler and the controllers run as the in-process ones of `wasmkube server` do:
	// as system:kube-scheduler and system:kube-controller-manager under RBAC, not admin.
	s, err := scheduler.New(ctx, scheduler.Options{RESTConfig: srv.SchedulerConfig(t), Logger: testLogger()})
	if err != nil {
		t.Fatalf("scheduler: %v", err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = s.Run(ctx) }()
	if o.ctrl != nil {
		e.controllers(ctx, &wg, *o.ctrl)
	}
	return e
}

func (e *env) hollow(ctx context.Context, wg *sync.WaitGroup, n int, prefix string, lease time.Duration) {
	e.t.Helper()
	ready := make(chan struct{})
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errc <- hollow.Run(ctx, e.srv.Config, hollow.Options{Count: n, Prefix: prefix, Ready: ready, LeaseInterval: lease, Logger: testLogger()})
	}()
	select {
	case <-ready:
	case err := <-errc:
		e.t.Fatalf("hollow nodes: %v", err)
	}
}

func (e *env) controllers(ctx context.Context, wg *sync.WaitGroup, o controller.Options) {
	o.RESTConfig = e.srv.ControllerManagerConfig(e.t)
	if o.Logger == nil {
		o.Logger = testLogger()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := controller.Run(ctx, o); err != nil {
			e.t.Errorf("controller.Run: %v", err)
		}
	}()
}

// eventually polls cond until it holds or waitTimeout passes.
func (e *env) eventually(what string, cond func() (bool, error)) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
}

func newDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}},
			},
		},
	}
}

// activePods are the pods of the app that are not terminating.
func (e *env) activePods(ns, app string) []corev1.Pod {
	pods, err := e.client.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// rolledOut is kubectl rollout status's test: the current generation observed, all
// replicas updated and available, no old replica left.
func (e *env) rolledOut(ns, name string) func() (bool, error) {
	return func() (bool, error) {
		d, err := e.client.AppsV1().Deployments(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := d.Status
		if d.Generation > st.ObservedGeneration {
			return false, fmt.Errorf("generation %d not observed (%d)", d.Generation, st.ObservedGeneration)
		}
		n := *d.Spec.Replicas
		if st.UpdatedReplicas != n || st.Replicas != n || st.AvailableReplicas != n {
			return false, fmt.Errorf("status %+v, want %d", st, n)
		}
		return true, nil
	}
}

func ctrlOpts() *controller.Options { return &controller.Options{Workers: 4} }

func TestScaleUpAndDown(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 4, ctrl: ctrlOpts()})
	d := newDeployment("web", 5, "busybox:1")
	if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("5 available", e.rolledOut("default", "web"))
	for _, n := range []int32{12, 2, 0, 3} {
		scale, err := e.client.AppsV1().Deployments("default").GetScale(e.ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = n
		if _, err := e.client.AppsV1().Deployments("default").UpdateScale(e.ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("scale to %d: %v", n, err)
		}
		e.eventually(fmt.Sprintf("%d replicas", n), func() (bool, error) {
			if ok, err := e.rolledOut("default", "web")(); !ok {
				return false, err
			}
			pods := e.activePods("default", "web")
			if len(pods) != int(n) {
				return false, fmt.Errorf("%d active pods", len(pods))
			}
			return true, nil
		})
	}
	// Scaling never made a second ReplicaSet.
	rss, _ := e.client.AppsV1().ReplicaSets("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if len(rss.Items) != 1 {
		t.Fatalf("%d replicasets after scaling, want 1", len(rss.Items))
	}
	// Every pod is controlled by that ReplicaSet, which the Deployment controls.
	rs := rss.Items[0]
	if ref := metav1.GetControllerOf(&rs); ref == nil || ref.Kind != "Deployment" || ref.Name != "web" {
		t.Fatalf("replicaset owner %+v", rs.OwnerReferences)
	}
	for _, p := range e.activePods("default", "web") {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != rs.UID {
			t.Fatalf("pod %s owner %+v", p.Name, p.OwnerReferences)
		}
	}
	evs, _ := e.client.CoreV1().Events("default").List(e.ctx, metav1.ListOptions{})
	reasons := map[string]bool{}
	for _, ev := range evs.Items {
		reasons[ev.Reason] = true
	}
	for _, r := range []string{"ScalingReplicaSet", "SuccessfulCreate", "SuccessfulDelete"} {
		if !reasons[r] {
			t.Errorf("no %s event recorded (have %v)", r, reasons)
		}
	}
}

// TestRollingUpdateBounds watches every pod event of a rolling update and checks on each
// one that the pods never exceed replicas+maxSurge and ready pods never drop below
// replicas-maxUnavailable.
func TestRollingUpdateBounds(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 4, ctrl: ctrlOpts()})
	const replicas, surge, unavailable = 10, 3, 2
	d := newDeployment("roll", replicas, "busybox:1")
	su, un := intstr.FromInt32(surge), intstr.FromInt32(unavailable)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &su, MaxUnavailable: &un}}
	if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("initial rollout", e.rolledOut("default", "roll"))

	list, err := e.client.CoreV1().Pods("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=roll"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.client.CoreV1().Pods("default").Watch(e.ctx, metav1.ListOptions{LabelSelector: "app=roll", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		pods[string(list.Items[i].UID)] = &list.Items[i]
	}
	var mu sync.Mutex
	var violations []string
	var maxSeen, minReady, events int
	minReady = replicas
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(pods, string(p.UID))
			} else {
				pods[string(p.UID)] = p
			}
			total, ready := 0, 0
			for _, q := range pods {
				if q.DeletionTimestamp != nil {
					continue
				}
				total++
				for _, c := range q.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			mu.Lock()
			events++
			maxSeen, minReady = max(maxSeen, total), min(minReady, ready)
			if total > replicas+surge {
				violations = append(violations, fmt.Sprintf("%d pods (max %d) after %s of %s", total, replicas+surge, ev.Type, p.Name))
			}
			if ready < replicas-unavailable {
				violations = append(violations, fmt.Sprintf("%d ready pods (min %d) after %s of %s", ready, replicas-unavailable, ev.Type, p.Name))
			}
			mu.Unlock()
		}
	}()

	cur, err := e.client.AppsV1().Deployments("default").Get(e.ctx, "roll", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	if _, err := e.client.AppsV1().Deployments("default").Update(e.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("rolling update complete", func() (bool, error) {
		if ok, err := e.rolledOut("default", "roll")(); !ok {
			return false, err
		}
		for _, p := range e.activePods("default", "roll") {
			if p.Spec.Containers[0].Image != "busybox:2" {
				return false, fmt.Errorf("pod %s still runs %s", p.Name, p.Spec.Containers[0].Image)
			}
		}
		return true, nil
	})
	w.Stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d pod events; at most %d pods, at least %d ready", events, maxSeen, minReady)
	if events < replicas*2 {
		t.Fatalf("only %d pod events watched: the rollout was not observed", events)
	}
	if len(violations) > 0 {
		t.Fatalf("bounds violated %d times, first: %s", len(violations), violations[0])
	}
	dd, _ := e.client.AppsV1().Deployments("default").Get(e.ctx, "roll", metav1.GetOptions{})
	if dd.Annotations[deployment.RevisionAnnotation] != "2" {
		t.Errorf("deployment revision %q, want 2", dd.Annotations[deployment.RevisionAnnotation])
	}
	cond := deployment.GetCondition(dd.Status, appsv1.DeploymentProgressing)
	if cond == nil || cond.Reason != deployment.ReasonNewRSAvailable {
		t.Errorf("Progressing = %+v, want NewReplicaSetAvailable", cond)
	}
	if cond := deployment.GetCondition(dd.Status, appsv1.DeploymentAvailable); cond == nil || cond.Status != corev1.ConditionTrue {
		t.Errorf("Available = %+v", cond)
	}
}

// TestRollbackAndHistory rolls out three templates with a history limit of 1, then rolls
// back as kubectl rollout undo does (the template of the previous revision's ReplicaSet).
func TestRollbackAndHistory(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 3, ctrl: ctrlOpts()})
	d := newDeployment("rb", 3, "busybox:1")
	limit := int32(1)
	d.Spec.RevisionHistoryLimit = &limit
	if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("v1", e.rolledOut("default", "rb"))
	setImage := func(img string) {
		t.Helper()
		for {
			cur, err := e.client.AppsV1().Deployments("default").Get(e.ctx, "rb", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Spec.Template.Spec.Containers[0].Image = img
			_, err = e.client.AppsV1().Deployments("default").Update(e.ctx, cur, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	setImage("busybox:2")
	e.eventually("v2", e.rolledOut("default", "rb"))
	setImage("busybox:3")
	e.eventually("v3 with history trimmed to 1", func() (bool, error) {
		if ok, err := e.rolledOut("default", "rb")(); !ok {
			return false, err
		}
		rss, err := e.client.AppsV1().ReplicaSets("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=rb"})
		if err != nil || len(rss.Items) != 2 {
			return false, fmt.Errorf("%d replicasets (%v)", len(rss.Items), err)
		}
		return true, nil
	})
	// Undo: the template of revision 2 goes back into the Deployment.
	rss, _ := e.client.AppsV1().ReplicaSets("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=rb"})
	var prev *appsv1.ReplicaSet
	for i := range rss.Items {
		if rss.Items[i].Annotations[deployment.RevisionAnnotation] == "2" {
			prev = &rss.Items[i]
		}
	}
	if prev == nil {
		t.Fatalf("no revision-2 ReplicaSet kept: %v", rss.Items)
	}
	setImage(prev.Spec.Template.Spec.Containers[0].Image)
	e.eventually("rolled back to busybox:2 as revision 4", func() (bool, error) {
		if ok, err := e.rolledOut("default", "rb")(); !ok {
			return false, err
		}
		rs, err := e.client.AppsV1().ReplicaSets("default").Get(e.ctx, prev.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if rs.Annotations[deployment.RevisionAnnotation] != "4" || *rs.Spec.Replicas != 3 {
			return false, fmt.Errorf("old replicaset revision %s replicas %d", rs.Annotations[deployment.RevisionAnnotation], *rs.Spec.Replicas)
		}
		for _, p := range e.activePods("default", "rb") {
			if p.Spec.Containers[0].Image != "busybox:2" {
				return false, fmt.Errorf("pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
			}
		}
		return true, nil
	})
}

func TestRecreateAndPause(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 3, ctrl: ctrlOpts()})
	d := newDeployment("rec", 4, "busybox:1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("v1", e.rolledOut("default", "rec"))
	// Pause, change the template: nothing rolls out.
	cur, _ := e.client.AppsV1().Deployments("default").Get(e.ctx, "rec", metav1.GetOptions{})
	cur.Spec.Paused = true
	cur.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	if _, err := e.client.AppsV1().Deployments("default").Update(e.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("paused condition", func() (bool, error) {
		d, err := e.client.AppsV1().Deployments("default").Get(e.ctx, "rec", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := deployment.GetCondition(d.Status, appsv1.DeploymentProgressing)
		return c != nil && c.Reason == deployment.ReasonPaused && d.Status.ObservedGeneration == d.Generation, nil
	})
	rss, _ := e.client.AppsV1().ReplicaSets("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=rec"})
	if len(rss.Items) != 1 {
		t.Fatalf("paused deployment made %d replicasets", len(rss.Items))
	}
	// Resume: Recreate never runs old and new pods together.
	cur, _ = e.client.AppsV1().Deployments("default").Get(e.ctx, "rec", metav1.GetOptions{})
	cur.Spec.Paused = false
	list, _ := e.client.CoreV1().Pods("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=rec"})
	w, err := e.client.CoreV1().Pods("default").Watch(e.ctx, metav1.ListOptions{LabelSelector: "app=rec", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := e.client.AppsV1().Deployments("default").Update(e.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	images := map[string]string{}
	for _, p := range list.Items {
		images[string(p.UID)] = p.Spec.Containers[0].Image
	}
	mixed := make(chan string, 1)
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(images, string(p.UID))
			} else {
				images[string(p.UID)] = p.Spec.Containers[0].Image
			}
			seen := map[string]bool{}
			for _, img := range images {
				seen[img] = true
			}
			if len(seen) > 1 {
				select {
				case mixed <- p.Name:
				default:
				}
			}
		}
	}()
	e.eventually("recreated", func() (bool, error) {
		if ok, err := e.rolledOut("default", "rec")(); !ok {
			return false, err
		}
		for _, p := range e.activePods("default", "rec") {
			if p.Spec.Containers[0].Image != "busybox:2" {
				return false, nil
			}
		}
		return true, nil
	})
	select {
	case name := <-mixed:
		t.Fatalf("old and new pods existed together (at pod %s)", name)
	default:
	}
}

func TestNodeFailureReschedules(t *testing.T) {
	tol := int64(1)
	grace := 2 * time.Second
	e := newEnv(t, envOpts{toleration: tol, ctrl: &controller.Options{Workers: 4, NodeMonitorGracePeriod: grace,
		DefaultTolerationSeconds: &tol, PodGCPeriod: 500 * time.Millisecond}})
	wg := e.wg
	// Only the doomed node exists when the pods are placed, so they all land on it.
	doomedCtx, kill := context.WithCancel(e.ctx)
	defer kill()
	e.hollow(doomedCtx, wg, 1, "doomed-", 300*time.Millisecond)
	d := newDeployment("nf", 4, "busybox:1")
	oneSecond := int64(1)
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = &oneSecond
	if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("4 pods on the doomed node", e.rolledOut("default", "nf"))
	e.hollow(e.ctx, wg, 2, "live-", 300*time.Millisecond)
	kill() // the doomed node stops heartbeating

	e.eventually("pods recreated on live nodes", func() (bool, error) {
		if ok, err := e.rolledOut("default", "nf")(); !ok {
			return false, err
		}
		for _, p := range e.activePods("default", "nf") {
			if !strings.HasPrefix(p.Spec.NodeName, "live-") {
				return false, fmt.Errorf("pod %s on %q", p.Name, p.Spec.NodeName)
			}
		}
		return true, nil
	})
	n, err := e.client.CoreV1().Nodes().Get(e.ctx, "doomed-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ready corev1.ConditionStatus
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status
		}
	}
	taints := map[string]bool{}
	for _, tt := range n.Spec.Taints {
		taints[tt.Key+":"+string(tt.Effect)] = true
	}
	if ready != corev1.ConditionUnknown || !taints[corev1.TaintNodeUnreachable+":NoExecute"] || !taints[corev1.TaintNodeUnreachable+":NoSchedule"] {
		t.Fatalf("dead node: Ready=%s taints=%v", ready, taints)
	}
	e.eventually("NodeNotReady and TaintManagerEviction events", func() (bool, error) {
		evs, err := e.client.CoreV1().Events("").List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, ev := range evs.Items {
			seen[ev.Reason] = true
		}
		return seen["NodeNotReady"] && seen["TaintManagerEviction"], fmt.Errorf("events %v", seen)
	})
	// The evicted pods' kubelet is gone: once their grace period is over the pod GC
	// removes them, so nothing stays Terminating.
	e.eventually("evicted pods removed", func() (bool, error) {
		pods, err := e.client.CoreV1().Pods("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=nf"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "doomed-0" {
				return false, fmt.Errorf("pod %s still on the dead node", p.Name)
			}
		}
		return len(pods.Items) == 4, fmt.Errorf("%d pods", len(pods.Items))
	})

	// The kubelet comes back: the node is Ready again and the taints go.
	e.hollow(e.ctx, wg, 1, "doomed-", 300*time.Millisecond)
	e.eventually("node recovered", func() (bool, error) {
		n, err := e.client.CoreV1().Nodes().Get(e.ctx, "doomed-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, tt := range n.Spec.Taints {
			if tt.Key == corev1.TaintNodeUnreachable || tt.Key == corev1.TaintNodeNotReady {
				return false, fmt.Errorf("taint %v still there", tt)
			}
		}
		return true, nil
	})
}

func TestCascadeDeletion(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 3, ctrl: ctrlOpts()})
	count := func(app string) (rs, pods int) {
		l, _ := e.client.AppsV1().ReplicaSets("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		return len(l.Items), len(e.activePods("default", app))
	}
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan} {
		t.Run(string(policy), func(t *testing.T) {
			name := "cascade-" + strings.ToLower(string(policy))
			if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, newDeployment(name, 3, "busybox:1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			e.eventually("rolled out", e.rolledOut("default", name))
			p := policy
			if err := e.client.AppsV1().Deployments("default").Delete(e.ctx, name, metav1.DeleteOptions{PropagationPolicy: &p}); err != nil {
				t.Fatal(err)
			}
			if policy == metav1.DeletePropagationForeground {
				// The owner is still there, Terminating, while its dependents go.
				d, err := e.client.AppsV1().Deployments("default").Get(e.ctx, name, metav1.GetOptions{})
				if err == nil && (d.DeletionTimestamp == nil || !containsString(d.Finalizers, metav1.FinalizerDeleteDependents)) {
					t.Fatalf("foreground: deployment not terminating with the finalizer: %+v", d.ObjectMeta)
				}
			}
			e.eventually("deployment gone", func() (bool, error) {
				_, err := e.client.AppsV1().Deployments("default").Get(e.ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), err
			})
			if policy == metav1.DeletePropagationForeground {
				// Foreground: by the time the owner is gone, so are its dependents.
				if rs, pods := count(name); rs != 0 || pods != 0 {
					t.Fatalf("foreground: owner gone with %d replicasets and %d pods left", rs, pods)
				}
				return
			}
			if policy == metav1.DeletePropagationOrphan {
				e.eventually("replicaset orphaned", func() (bool, error) {
					l, err := e.client.AppsV1().ReplicaSets("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					if err != nil || len(l.Items) != 1 {
						return false, err
					}
					return len(l.Items[0].OwnerReferences) == 0, nil
				})
				if _, pods := count(name); pods != 3 {
					t.Fatalf("orphan: %d pods left, want 3", pods)
				}
				// A new Deployment with the same template adopts the orphans: no new pods.
				before := map[string]bool{}
				for _, p := range e.activePods("default", name) {
					before[p.Name] = true
				}
				nd, err := e.client.AppsV1().Deployments("default").Create(e.ctx, newDeployment(name, 3, "busybox:1"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				e.eventually("orphaned replicaset adopted", func() (bool, error) {
					l, err := e.client.AppsV1().ReplicaSets("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					if err != nil || len(l.Items) != 1 {
						return false, fmt.Errorf("%d replicasets (%v)", len(l.Items), err)
					}
					ref := metav1.GetControllerOf(&l.Items[0])
					return ref != nil && ref.UID == nd.UID, fmt.Errorf("owner %v", l.Items[0].OwnerReferences)
				})
				e.eventually("rolled out on the adopted pods", e.rolledOut("default", name))
				for _, p := range e.activePods("default", name) {
					if !before[p.Name] {
						t.Fatalf("adoption created pod %s", p.Name)
					}
				}
				return
			}
			e.eventually("dependents gone", func() (bool, error) {
				rs, pods := count(name)
				return rs == 0 && pods == 0, fmt.Errorf("%d replicasets, %d pods", rs, pods)
			})
		})
	}
}

// TestGarbageCollectorAnyResource: ownerReferences work across resources the controllers
// know nothing about, and an object with a live owner left is kept.
func TestGarbageCollectorAnyResource(t *testing.T) {
	e := newEnv(t, envOpts{ctrl: ctrlOpts()})
	owner, err := e.client.CoreV1().ConfigMaps("default").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.client.CoreV1().ConfigMaps("default").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refTo := func(o *corev1.ConfigMap) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{refTo(owner)}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := e.client.CoreV1().Services("default").Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shared := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared", OwnerReferences: []metav1.OwnerReference{refTo(owner), refTo(other)}}}
	if _, err := e.client.CoreV1().ConfigMaps("default").Create(e.ctx, shared, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CoreV1().ConfigMaps("default").Delete(e.ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("service with its only owner gone is deleted", func() (bool, error) {
		_, err := e.client.CoreV1().Services("default").Get(e.ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	e.eventually("shared dependent keeps its live owner only", func() (bool, error) {
		s, err := e.client.CoreV1().ConfigMaps("default").Get(e.ctx, "shared", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(s.OwnerReferences) == 1 && s.OwnerReferences[0].UID == other.UID, fmt.Errorf("owners %v", s.OwnerReferences)
	})
}

// TestProgressDeadline: a rollout that cannot progress (its pods fit no node) is reported
// with Progressing=False, ProgressDeadlineExceeded, which kubectl rollout status reports.
func TestProgressDeadline(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 1, ctrl: ctrlOpts()})
	d := newDeployment("stuck", 2, "busybox:1")
	d.Spec.Template.Spec.NodeSelector = map[string]string{"no-such": "label"}
	deadline := int32(2)
	d.Spec.ProgressDeadlineSeconds = &deadline
	if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("ProgressDeadlineExceeded", func() (bool, error) {
		d, err := e.client.AppsV1().Deployments("default").Get(e.ctx, "stuck", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := deployment.GetCondition(d.Status, appsv1.DeploymentProgressing)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == deployment.ReasonTimedOut, fmt.Errorf("progressing %+v", c)
	})
	d2, _ := e.client.AppsV1().Deployments("default").Get(e.ctx, "stuck", metav1.GetOptions{})
	if c := deployment.GetCondition(d2.Status, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionFalse {
		t.Fatalf("Available = %+v, want False", c)
	}
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestLeaderFailover(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 2})
	lead := func(id string) (context.CancelFunc, chan struct{}) {
		ctx, cancel := context.WithCancel(e.ctx)
		started := make(chan struct{})
		var once sync.Once
		e.controllers(ctx, e.wg, controller.Options{Workers: 2, LeaderElect: true, Identity: id,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			OnStartedLeading: func() { once.Do(func() { close(started) }) }})
		return cancel, started
	}
	stopA, startedA := lead("a")
	<-startedA
	_, startedB := lead("b")
	holder := func() string {
		l, err := e.client.CoordinationV1().Leases("kube-system").Get(e.ctx, controller.LeaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	if h := holder(); h != "a" {
		t.Fatalf("lease holder %q, want a", h)
	}
	if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, newDeployment("lf", 2, "busybox:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("rolled out under a", e.rolledOut("default", "lf"))
	select {
	case <-startedB:
		t.Fatal("b started its controllers while a held the lease")
	default:
	}
	stopA()
	select {
	case <-startedB:
	case <-time.After(waitTimeout):
		t.Fatal("b never took over")
	}
	if h := holder(); h != "b" {
		t.Fatalf("lease holder %q, want b", h)
	}
	scale, _ := e.client.AppsV1().Deployments("default").GetScale(e.ctx, "lf", metav1.GetOptions{})
	scale.Spec.Replicas = 4
	if _, err := e.client.AppsV1().Deployments("default").UpdateScale(e.ctx, "lf", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("scaled under b", func() (bool, error) {
		if ok, err := e.rolledOut("default", "lf")(); !ok {
			return false, err
		}
		return len(e.activePods("default", "lf")) == 4, nil
	})
}

func TestNamespaceDeletion(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 2, ctrl: ctrlOpts()})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
	if _, err := e.client.CoreV1().Namespaces().Create(e.ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := newDeployment("app", 3, "busybox:1")
	d.Namespace = "doomed"
	if _, err := e.client.AppsV1().Deployments("doomed").Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "doomed"}, Data: map[string]string{"a": "b"}}
	if _, err := e.client.CoreV1().ConfigMaps("doomed").Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("rolled out", e.rolledOut("doomed", "app"))
	if err := e.client.CoreV1().Namespaces().Delete(e.ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("namespace gone", func() (bool, error) {
		_, err := e.client.CoreV1().Namespaces().Get(e.ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	pods, _ := e.client.CoreV1().Pods("doomed").List(e.ctx, metav1.ListOptions{})
	cms, _ := e.client.CoreV1().ConfigMaps("doomed").List(e.ctx, metav1.ListOptions{})
	if len(pods.Items) != 0 || len(cms.Items) != 0 {
		t.Fatalf("left behind: %d pods, %d configmaps", len(pods.Items), len(cms.Items))
	}
}

func TestEndpointsFollowPods(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 2, ctrl: ctrlOpts()})
	if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, newDeployment("svc", 3, "busybox:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "svc"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := e.client.CoreV1().Services("default").Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("3 ready addresses", func() (bool, error) {
		ep, err := e.client.CoreV1().Endpoints("default").Get(e.ctx, "svc", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for _, s := range ep.Subsets {
			n += len(s.Addresses)
			if s.Ports[0].Port != 8080 {
				return false, fmt.Errorf("port %d", s.Ports[0].Port)
			}
		}
		return n == 3, fmt.Errorf("%d addresses", n)
	})
	// A pod turns not ready: it moves to notReadyAddresses.
	p := e.activePods("default", "svc")[0]
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	if _, err := e.client.CoreV1().Pods("default").UpdateStatus(e.ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("pod out of the service", func() (bool, error) {
		ep, err := e.client.CoreV1().Endpoints("default").Get(e.ctx, "svc", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range ep.Subsets {
			for _, a := range s.NotReadyAddresses {
				if a.IP == p.Status.PodIP {
					return len(s.Addresses) == 2, nil
				}
			}
		}
		return false, nil
	})
}

// TestLeaderLost: when another candidate takes the Lease, the leader stops its controllers
// and stands by; when the other one goes away, it takes the Lease back and starts its
// controllers again (a new term), and Run keeps running until its ctx ends.
func TestLeaderLost(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	started := make(chan struct{}, 4)
	result := make(chan error, 1)
	status := leaderelect.NewStatus()
	go func() {
		result <- controller.Run(ctx, controller.Options{RESTConfig: e.srv.ControllerManagerConfig(t), Logger: testLogger(), Workers: 1,
			LeaderElect: true, Identity: "victim", LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond,
			RetryPeriod: 200 * time.Millisecond, Status: status, OnStartedLeading: func() { started <- struct{}{} }})
	}()
	select {
	case <-started:
	case err := <-result:
		t.Fatalf("Run returned before leading: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("never led")
	}
	// An intruder keeps writing itself into the Lease, as a candidate that took over would.
	leases := e.client.CoordinationV1().Leases("kube-system")
	intrude := func() {
		l, err := leases.Get(e.ctx, controller.LeaseName, metav1.GetOptions{})
		if err == nil {
			id, now := "intruder", metav1.NowMicro()
			l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.AcquireTime = &id, &now, &now
			_, _ = leases.Update(e.ctx, l, metav1.UpdateOptions{})
		}
	}
	e.eventually("the victim stands by", func() (bool, error) {
		intrude()
		time.Sleep(100 * time.Millisecond)
		_, ended := status.Terms()
		return ended == 1 && status.Phase() == leaderelect.Standby, fmt.Errorf("phase %s, %d terms ended", status.Phase(), ended)
	})
	if err := status.Check(); err != nil {
		t.Fatalf("a standby is unhealthy: %v", err)
	}
	select {
	case err := <-result:
		t.Fatalf("Run returned after losing the Lease: %v", err)
	default:
	}
	// The intruder stops renewing: the victim takes the Lease back once it expires.
	select {
	case <-started:
	case err := <-result:
		t.Fatalf("Run returned: %v", err)
	case <-time.After(waitTimeout):
		t.Fatalf("the victim never led again (phase %s)", status.Phase())
	}
	if terms, _ := status.Terms(); terms != 2 {
		t.Fatalf("%d terms, want 2", terms)
	}
	cancel()
	if err := <-result; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if err := status.Check(); err == nil || status.Phase() != leaderelect.Stopped {
		t.Fatalf("after Run returned: phase %s, check %v", status.Phase(), err)
	}
	l, err := leases.Get(e.ctx, controller.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		t.Fatalf("lease still held by %q after Run returned", *h)
	}
}
