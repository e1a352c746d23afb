package leaderelect

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// waitFor bounds every wait of these tests: they wait for behaviour, not for speed.
const waitFor = 30 * time.Second

// outageClient is a fake clientset whose Lease requests fail while down is set, as
// they do while etcd has no quorum.
func outageClient() (*fake.Clientset, *atomic.Bool) {
	c := fake.NewClientset()
	down := &atomic.Bool{}
	c.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errors.New("etcdserver: request timed out")
		}
		return false, nil, nil
	})
	return c, down
}

func testConfig(c *fake.Clientset, st *Status) Config {
	return Config{Client: c.CoordinationV1(), Namespace: "kube-system", Name: "test-lease", Identity: "me",
		LeaseDuration: 600 * time.Millisecond, RenewDeadline: 400 * time.Millisecond, RetryPeriod: 50 * time.Millisecond,
		Component: "test", Status: st}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func holder(t *testing.T, c *fake.Clientset) string {
	t.Helper()
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "test-lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// A leader whose renewals fail past the renew deadline stops its work, waits until the
// work has returned, stands by (healthy), and leads again once the API answers: a new
// term that never overlaps the old one.
func TestRunLeadsAgainAfterRenewalsFail(t *testing.T) {
	c, down := outageClient()
	st := NewStatus()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		active, overlaps atomic.Int32
		terms            = make(chan int, 8)
		n                int
	)
	result := make(chan error, 1)
	go func() {
		result <- Run(ctx, testConfig(c, st), func(lctx context.Context) error {
			if active.Add(1) > 1 {
				overlaps.Add(1)
			}
			n++
			terms <- n
			<-lctx.Done()
			time.Sleep(50 * time.Millisecond) // the term's work takes a moment to stop
			active.Add(-1)
			return nil
		})
	}()
	if got := <-terms; got != 1 {
		t.Fatalf("term %d, want 1", got)
	}
	if err := st.Check(); err != nil || st.Phase() != Leading {
		t.Fatalf("leading: phase %s, check %v", st.Phase(), err)
	}
	down.Store(true)
	eventually(t, "the leader stands by", func() bool {
		_, ended := st.Terms()
		return ended == 1 && st.Phase() == Standby && active.Load() == 0
	})
	if err := st.Check(); err != nil {
		t.Fatalf("a standby must be healthy: %v", err)
	}
	// Still down: it keeps campaigning and does not lead.
	time.Sleep(300 * time.Millisecond)
	if st.Phase() != Standby {
		t.Fatalf("phase %s while the API is down, want standby", st.Phase())
	}
	down.Store(false)
	select {
	case got := <-terms:
		if got != 2 {
			t.Fatalf("term %d, want 2", got)
		}
	case err := <-result:
		t.Fatalf("Run returned: %v", err)
	case <-time.After(waitFor):
		t.Fatalf("never led again (phase %s)", st.Phase())
	}
	if overlaps.Load() != 0 {
		t.Fatal("two terms ran at once")
	}
	if h := holder(t, c); h != "me" {
		t.Fatalf("lease holder %q, want me", h)
	}
	cancel()
	if err := <-result; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if active.Load() != 0 {
		t.Fatal("Run returned before the term's work did")
	}
	if h := holder(t, c); h != "" {
		t.Fatalf("lease holder %q after Run returned, want released", h)
	}
	if st.Phase() != Stopped || st.Check() == nil {
		t.Fatalf("after Run: phase %s, check %v", st.Phase(), st.Check())
	}
}

// Work that fails while leading gives the Lease up (so a standby can lead), shows as
// failed, and is started again after a back-off.
func TestRunReleasesAndRetriesWhenTheWorkFails(t *testing.T) {
	c, _ := outageClient()
	st := NewStatus()
	cfg := testConfig(c, st)
	cfg.RetryPeriod = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := make(chan int, 8)
	var mu sync.Mutex
	n := 0
	result := make(chan error, 1)
	go func() {
		result <- Run(ctx, cfg, func(lctx context.Context) error {
			mu.Lock()
			n++
			i := n
			mu.Unlock()
			calls <- i
			if i == 1 {
				return errors.New("boom")
			}
			<-lctx.Done()
			return nil
		})
	}()
	<-calls
	eventually(t, "the failure shows", func() bool {
		err := st.Check()
		return st.Phase() == Failed && err != nil && strings.Contains(err.Error(), "boom")
	})
	if h := holder(t, c); h != "" {
		t.Fatalf("lease holder %q after the work failed, want released", h)
	}
	select {
	case <-calls:
	case <-time.After(waitFor):
		t.Fatalf("not started again (phase %s)", st.Phase())
	}
	eventually(t, "healthy again", func() bool { return st.Check() == nil })
	cancel()
	if err := <-result; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// A standby does not take a Lease its holder keeps renewing, and takes it, with one more
// transition recorded, once the holder stops: never before the Lease's duration has passed
// since it saw the last renewal.
func TestStandbyTakesOverAnUnrenewedLease(t *testing.T) {
	c := fake.NewClientset()
	leases := c.CoordinationV1().Leases("kube-system")
	other, secs, transitions := "other", int32(1), int32(3)
	now := metav1.NewMicroTime(time.Now())
	if _, err := leases.Create(context.Background(), &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "test-lease", Namespace: "kube-system"},
		Spec: coordv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now,
			LeaseTransitions: &transitions},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An unrelated Lease in the namespace changes all along: it is not the one watched.
	if _, err := leases.Create(context.Background(), &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: "kube-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	renew := func(name string) time.Time {
		l, err := leases.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return time.Now()
		}
		at := time.Now()
		rt := metav1.NewMicroTime(at)
		l.Spec.RenewTime = &rt
		if _, err := leases.Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
		return at
	}
	st := NewStatus()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	led := make(chan time.Time, 1)
	result := make(chan error, 1)
	go func() {
		result <- Run(ctx, testConfig(c, st), func(lctx context.Context) error {
			led <- time.Now()
			<-lctx.Done()
			return nil
		})
	}()
	var last time.Time
	for range 30 { // 3 s of renewals by the holder: three times its lease
		last = renew("test-lease")
		renew("unrelated")
		select {
		case <-led:
			t.Fatal("the standby took a Lease its holder was renewing")
		case <-time.After(100 * time.Millisecond):
		}
	}
	for range 10 {
		renew("unrelated")
		time.Sleep(50 * time.Millisecond)
	}
	var at time.Time
	select {
	case at = <-led:
	case <-time.After(waitFor):
		t.Fatalf("never took over (phase %s)", st.Phase())
	}
	if at.Sub(last) < time.Duration(secs)*time.Second {
		t.Fatalf("took over %s after the last renewal, before the lease's %d s", at.Sub(last), secs)
	}
	l, err := leases.Get(context.Background(), "test-lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "me" || *l.Spec.LeaseTransitions != transitions+1 {
		t.Fatalf("after the takeover: holder %s, transitions %d (want me, %d)", *l.Spec.HolderIdentity, *l.Spec.LeaseTransitions, transitions+1)
	}
	cancel()
	if err := <-result; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestRunNeedsALease(t *testing.T) {
	if err := Run(context.Background(), Config{}, func(context.Context) error { return nil }); err == nil {
		t.Fatal("Run without a lease: no error")
	}
}

func TestStatus(t *testing.T) {
	st := NewStatus()
	if err := st.Check(); err == nil || !strings.HasPrefix(err.Error(), "starting for ") {
		t.Fatalf("new status: %v", err)
	}
	st.Set(Standby, nil)
	st.Set(Leading, nil)
	if st.Check() != nil {
		t.Fatal(st.Check())
	}
	st.Set(Stopping, nil)
	st.Set(Failed, errors.New("discovery failed"))
	if err := st.Check(); err == nil || !strings.Contains(err.Error(), "failed for ") || !strings.Contains(err.Error(), "discovery failed") {
		t.Fatalf("failed: %v", err)
	}
	st.Set(Leading, nil)
	st.Set(Stopped, errors.New("bye"))
	st.Set(Leading, nil) // stopped is final
	if st.Phase() != Stopped {
		t.Fatalf("phase %s after stopped, want stopped", st.Phase())
	}
	if terms, ended := st.Terms(); terms != 2 || ended != 1 {
		t.Fatalf("terms %d ended %d, want 2 and 1", terms, ended)
	}
	if got := backoff(time.Second, 1); got != time.Second {
		t.Fatalf("backoff 1: %s", got)
	}
	if got := backoff(time.Second, 3); got != 4*time.Second {
		t.Fatalf("backoff 3: %s", got)
	}
	if got := backoff(time.Second, 50); got != maxFailureBackoff {
		t.Fatalf("backoff 50: %s", got)
	}
}
