package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

func TestDiff(t *testing.T) {
	cases := []struct {
		desired int32
		active  int
		want    int
	}{{3, 1, 2}, {1, 3, -2}, {2, 2, 0}, {2000, 0, BurstReplicas}, {0, 900, -BurstReplicas}}
	for _, c := range cases {
		if got := Diff(c.desired, c.active); got != c.want {
			t.Errorf("Diff(%d,%d) = %d, want %d", c.desired, c.active, got, c.want)
		}
	}
}

func TestSlowStart(t *testing.T) {
	var calls atomic.Int32
	n, err := SlowStart(10, 1, func() error { calls.Add(1); return nil })
	if n != 10 || err != nil || calls.Load() != 10 {
		t.Fatalf("SlowStart(10) = %d, %v after %d calls", n, err, calls.Load())
	}
	calls.Store(0)
	// Every call fails: batches 1 only, then stop.
	n, err = SlowStart(10, 1, func() error { calls.Add(1); return errors.New("quota") })
	if n != 0 || err == nil || calls.Load() != 1 {
		t.Fatalf("failing SlowStart = %d, %v after %d calls, want 0, error, 1 call", n, err, calls.Load())
	}
	// Third call fails: batches 1, 2 ran; 2 succeeded.
	calls.Store(0)
	n, err = SlowStart(10, 1, func() error {
		if calls.Add(1) == 3 {
			return errors.New("boom")
		}
		return nil
	})
	if n != 2 || err == nil || calls.Load() != 3 {
		t.Fatalf("SlowStart with third failing = %d, %v, calls %d", n, err, calls.Load())
	}
}

func TestCalculateStatus(t *testing.T) {
	now := time.Unix(2000, 0)
	rs := newRS("rs", 3)
	rs.Generation = 4
	rs.Spec.MinReadySeconds = 10
	ready := func(since time.Time) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
	}
	del := metav1.NewTime(now)
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: rs.Spec.Template.Labels}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(now.Add(-time.Minute))}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: rs.Spec.Template.Labels}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(now.Add(-time.Second))}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"app": "web"}}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
		{ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: rs.Spec.Template.Labels, DeletionTimestamp: &del}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(now.Add(-time.Hour))}},
		{ObjectMeta: metav1.ObjectMeta{Name: "e", Labels: rs.Spec.Template.Labels}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
	}
	st := CalculateStatus(rs, pods, nil, now)
	if st.Replicas != 3 || st.FullyLabeledReplicas != 2 || st.ReadyReplicas != 2 || st.AvailableReplicas != 1 || st.ObservedGeneration != 4 || *st.TerminatingReplicas != 1 {
		t.Fatalf("status = %+v", st)
	}
	st = CalculateStatus(rs, pods, errors.New("quota exceeded"), now)
	if len(st.Conditions) != 1 || st.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure {
		t.Fatalf("no ReplicaFailure condition: %+v", st.Conditions)
	}
	rs.Status = st
	if st = CalculateStatus(rs, pods, nil, now); len(st.Conditions) != 0 {
		t.Fatalf("ReplicaFailure not cleared: %+v", st.Conditions)
	}
}

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	sel := map[string]string{"app": "web", "tier": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + "rs-" + "1"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		},
	}
}

// startController builds a controller that writes through writes and caches what cacheSource
// holds, and starts its informers; they stop when the test ends.
func startController(t *testing.T, writes, cacheSource kubernetes.Interface) (*Controller, context.Context) {
	t.Helper()
	f := informers.NewSharedInformerFactory(cacheSource, 0)
	c, err := New(writes, f, record.NewFakeRecorder(100), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return c, ctx
}

// TestControllerFake runs the controller against client-go's fake clientset: it scales up
// with ownerReferences, adopts an orphan, and scales down deleting the unscheduled pod first.
func TestControllerFake(t *testing.T) {
	rs := newRS("web", 3)
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "default", Labels: rs.Spec.Template.Labels, UID: "orphan-uid"},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	client := fake.NewClientset(rs, orphan)
	var seq atomic.Int32
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Name == "" {
			n := seq.Add(1)
			p.Name = fmt.Sprintf("%s%d", p.GenerateName, n)
			p.UID = types.UID("gen-" + p.Name)
		}
		return false, nil, nil
	})
	c, ctx := startController(t, client, client)

	syncUntil := func(what string, ok func([]corev1.Pod) bool) []corev1.Pod {
		t.Helper()
		for range 50 {
			if err := c.sync(ctx, "default/web"); err != nil {
				t.Fatal(err)
			}
			pods, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if ok(pods.Items) {
				return pods.Items
			}
			time.Sleep(20 * time.Millisecond) // let the informer catch up before the next pass
		}
		t.Fatalf("never reached: %s", what)
		return nil
	}
	pods := syncUntil("3 pods", func(p []corev1.Pod) bool { return len(p) == 3 })
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rs.UID {
			t.Fatalf("pod %s not controlled by the replicaset: %+v", p.Name, p.OwnerReferences)
		}
	}
	// Scale to 1: the two created (unscheduled) pods go; the scheduled orphan stays.
	rs1 := rs.DeepCopy()
	one := int32(1)
	rs1.Spec.Replicas = &one
	if _, err := client.AppsV1().ReplicaSets("default").Update(ctx, rs1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cache.WaitForCacheSync(ctx.Done(), func() bool {
		r, _ := c.rsLister.ReplicaSets("default").Get("web")
		return *r.Spec.Replicas == 1
	}); !err {
		t.Fatal("cache")
	}
	pods = syncUntil("1 pod", func(p []corev1.Pod) bool { return len(p) == 1 })
	if pods[0].Name != "orphan" {
		t.Fatalf("kept %s, want the scheduled pod", pods[0].Name)
	}
	// Status is computed from the cache, so it follows once the informer saw the deletions.
	syncUntil("status.replicas 1", func([]corev1.Pod) bool {
		got, _ := client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		return got.Status.Replicas == 1
	})
}

// TestNoOverCreationUnderInformerLag: the informer never shows the pods the controller
// created (it watches another clientset), so only the expectations stop a second pass from
// creating them again.
func TestNoOverCreationUnderInformerLag(t *testing.T) {
	rs := newRS("lag", 4)
	writes := fake.NewClientset()
	var creates atomic.Int32
	writes.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Name = fmt.Sprintf("%s%d", p.GenerateName, creates.Add(1))
		return false, nil, nil
	})
	c, ctx := startController(t, writes, fake.NewClientset(rs))
	for range 3 {
		// Status updates go to a clientset without the ReplicaSet: ignore their NotFound.
		_ = c.sync(ctx, "default/lag")
	}
	if n := creates.Load(); n != 4 {
		t.Fatalf("created %d pods over 3 passes with a lagging cache, want 4", n)
	}
	if adds, _ := c.exp.Pending("default/lag"); adds != 4 {
		t.Fatalf("pending creations = %d, want 4", adds)
	}
}
