package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wasmkube/wasmkube/core/leaderelect"
	"github.com/wasmkube/wasmkube/core/scheduler"
)

func nodeSelector(kv ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func (c *cluster) updateNode(name string, f func(*v1.Node)) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		f(n)
		_, err = c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		c.t.Fatalf("update node %s: %v", name, err)
	}
}

func TestExplainScheduledPod(t *testing.T) {
	c := newCluster(t, 3)
	c.startScheduler(scheduler.Options{})
	c.createPod("web", requests("100m", "64Mi"))
	p := c.waitPod("web", "bound with an explanation", func(p *v1.Pod) bool { return bound(p) && explanation(t, p) != nil })
	e := explanation(t, p)
	if e.Result != "Scheduled" || e.Node != p.Spec.NodeName || e.Nodes != 3 || e.Feasible != 3 || len(e.Top) != 3 {
		t.Fatalf("explanation %+v, want Scheduled on %s with 3 feasible nodes listed", e, p.Spec.NodeName)
	}
	var chosen int64 = -1
	for _, n := range e.Top {
		if n.Node == e.Node {
			chosen = n.Total
		}
		if len(n.Scores) != len(e.ScorePlugins) {
			t.Fatalf("node %s: %d scores for %d plugins", n.Node, len(n.Scores), len(e.ScorePlugins))
		}
	}
	if chosen != e.Top[0].Total {
		t.Fatalf("chosen node %s scored %d, but the best total is %d", e.Node, chosen, e.Top[0].Total)
	}
}

func TestRequeueOnNodeAddUpdateAndPodDelete(t *testing.T) {
	c := newCluster(t, 3)
	c.startScheduler(scheduler.Options{})

	// No node has the label: unschedulable, with upstream's reason.
	c.createPod("picky", nodeSelector("pool", "gpu"), requests("100m", "64Mi"))
	p := c.waitPod("picky", "unschedulable", unschedulable)
	if want := "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."; !strings.HasPrefix(schedMessage(p), want) {
		t.Fatalf("message %q, want %q", schedMessage(p), want)
	}
	// A node update that adds the label makes it schedulable.
	c.updateNode("hollow-1", func(n *v1.Node) { n.Labels["pool"] = "gpu" })
	p = c.waitPod("picky", "bound after the node update", bound)
	if p.Spec.NodeName != "hollow-1" {
		t.Fatalf("picky on %s, want hollow-1", p.Spec.NodeName)
	}

	// A new node requeues pods waiting for it.
	c.createPod("big-pool", nodeSelector("pool", "big"), requests("100m", "64Mi"))
	c.waitPod("big-pool", "unschedulable", unschedulable)
	c.hollow(c.ctx, 1, "big-")
	c.updateNode("big-0", func(n *v1.Node) { n.Labels["pool"] = "big" })
	p = c.waitPod("big-pool", "bound after the node was added", bound)
	if p.Spec.NodeName != "big-0" {
		t.Fatalf("big-pool on %s, want big-0", p.Spec.NodeName)
	}

	// A deleted pod frees room for a waiting one.
	c.createPod("hog", nodeSelector("pool", "big"), requests("3500m", "64Mi"))
	c.waitPod("hog", "bound", bound)
	c.createPod("waiter", nodeSelector("pool", "big"), requests("1", "64Mi"))
	p = c.waitPod("waiter", "unschedulable", unschedulable)
	if !strings.Contains(schedMessage(p), "1 Insufficient cpu") {
		t.Fatalf("waiter: message %q, want 1 Insufficient cpu", schedMessage(p))
	}
	if err := c.client.CoreV1().Pods("default").Delete(c.ctx, "hog", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitPod("waiter", "bound after the hog was deleted", bound)
}

func TestTaintsAndTolerations(t *testing.T) {
	c := newCluster(t, 3)
	// Tainted before the scheduler starts, so its first list has the taints.
	for _, n := range []string{"hollow-0", "hollow-1"} {
		c.updateNode(n, func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule})
		})
	}
	c.startScheduler(scheduler.Options{})
	for i := range 3 {
		name := fmt.Sprintf("plain-%d", i)
		c.createPod(name, requests("100m", "64Mi"))
		if p := c.waitPod(name, "bound", bound); p.Spec.NodeName != "hollow-2" {
			t.Fatalf("%s on %s, want the untainted hollow-2", name, p.Spec.NodeName)
		}
	}
	c.createPod("to-tainted", nodeSelector(v1.LabelHostname, "hollow-0"))
	p := c.waitPod("to-tainted", "unschedulable", unschedulable)
	// TaintToleration filters before NodeAffinity, so the tainted node that does not
	// match is counted as tainted, as upstream does.
	want := "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint {dedicated: gpu}. " +
		"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
	if !strings.HasPrefix(schedMessage(p), want) {
		t.Fatalf("message %q, want %q", schedMessage(p), want)
	}
	c.createPod("tolerant", nodeSelector(v1.LabelHostname, "hollow-0"), func(p *v1.Pod) {
		p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	})
	if p := c.waitPod("tolerant", "bound", bound); p.Spec.NodeName != "hollow-0" {
		t.Fatalf("tolerant on %s, want hollow-0", p.Spec.NodeName)
	}
}

func antiAffinity(key string, lbl ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{lbl[0]: lbl[1]}},
		}}}}
	}
}

func TestPodAffinityAndAntiAffinity(t *testing.T) {
	c := newCluster(t, 3)
	c.startScheduler(scheduler.Options{})
	seen := map[string]bool{}
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		c.createPod(name, labels("app", "web"), antiAffinity(v1.LabelHostname, "app", "web"))
		p := c.waitPod(name, "bound", bound)
		if seen[p.Spec.NodeName] {
			t.Fatalf("%s shares node %s with another web pod despite anti-affinity", name, p.Spec.NodeName)
		}
		seen[p.Spec.NodeName] = true
	}
	c.createPod("web-3", labels("app", "web"), antiAffinity(v1.LabelHostname, "app", "web"))
	p := c.waitPod("web-3", "unschedulable", unschedulable)
	// The running pods' anti-affinity matches the new pod too, and is checked first.
	if want := "0/3 nodes are available: 3 node(s) didn't satisfy existing pods anti-affinity rules. " +
		"preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."; schedMessage(p) != want {
		t.Fatalf("message %q, want %q", schedMessage(p), want)
	}
	// Required affinity to a zone with a cache pod.
	c.createPod("cache", labels("app", "cache"), nodeSelector(v1.LabelHostname, "hollow-1"))
	c.waitPod("cache", "bound", bound)
	c.createPod("near-cache", func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			TopologyKey: v1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}},
		}}}}
	})
	if p := c.waitPod("near-cache", "bound", bound); p.Spec.NodeName != "hollow-1" {
		t.Fatalf("near-cache on %s, want hollow-1 (the only node in zone-1)", p.Spec.NodeName)
	}
}

func TestTopologySpread(t *testing.T) {
	c := newCluster(t, 6)
	c.startScheduler(scheduler.Options{})
	zones := map[string]int{}
	for i := range 6 {
		name := fmt.Sprintf("spread-%d", i)
		c.createPod(name, labels("app", "spread"), requests("100m", "64Mi"), func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
			}}
		})
		p := c.waitPod(name, "bound", bound)
		n, err := c.client.CoreV1().Nodes().Get(c.ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zones[n.Labels[v1.LabelTopologyZone]]++
		lo, hi := 1<<30, 0
		for _, z := range []string{"zone-0", "zone-1", "zone-2"} {
			lo, hi = min(lo, zones[z]), max(hi, zones[z])
		}
		if hi-lo > 1 {
			t.Fatalf("after %s: zones %v have skew %d > 1", name, zones, hi-lo)
		}
	}
	if zones["zone-0"] != 2 || zones["zone-1"] != 2 || zones["zone-2"] != 2 {
		t.Fatalf("zones %v, want 2 pods in each", zones)
	}
	// Only zone-0 is allowed by the selector, but it already has 2 and the others 2:
	// placing a third there keeps skew 1; a fourth would not.
	zone0 := func(name string) {
		c.createPod(name, labels("app", "spread"), func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule,
				NodeAffinityPolicy: ptrTo(v1.NodeInclusionPolicyIgnore),
				LabelSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
			}}
			p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: "zone-0"}
		})
	}
	zone0("zone0-a")
	c.waitPod("zone0-a", "bound", bound)
	zone0("zone0-b")
	p := c.waitPod("zone0-b", "unschedulable", unschedulable)
	if !strings.Contains(schedMessage(p), "node(s) didn't match pod topology spread constraints") {
		t.Fatalf("message %q, want a topology spread reason", schedMessage(p))
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestPreemption(t *testing.T) {
	c := newCluster(t, 2)
	s, _ := c.startScheduler(scheduler.Options{})
	never := v1.PreemptNever
	for _, pc := range []schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "prio-10"}, Value: 10},
		{ObjectMeta: metav1.ObjectMeta{Name: "prio-50-never"}, Value: 50, PreemptionPolicy: &never},
		{ObjectMeta: metav1.ObjectMeta{Name: "prio-100"}, Value: 100},
	} {
		if _, err := c.client.SchedulingV1().PriorityClasses().Create(c.ctx, &pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		name := fmt.Sprintf("low-%d", i)
		c.createPod(name, priority(10), requests("3", "64Mi"))
		c.waitPod(name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}
	c.createPod("mid", requests("3", "64Mi"), func(p *v1.Pod) { p.Spec.PriorityClassName = "prio-50-never" })
	p := c.waitPod("mid", "unschedulable", unschedulable)
	if want := "preemption: not eligible due to preemptionPolicy=Never."; !strings.Contains(schedMessage(p), want) {
		t.Fatalf("mid: message %q, want it to contain %q", schedMessage(p), want)
	}
	c.createPod("high", priority(100), requests("3", "64Mi"))
	p = c.waitPod("high", "bound after preemption", bound)
	victims := 0
	for i := range 2 {
		lp, err := c.client.CoreV1().Pods("default").Get(c.ctx, fmt.Sprintf("low-%d", i), metav1.GetOptions{})
		if err != nil {
			victims++
			continue
		}
		if lp.Spec.NodeName == p.Spec.NodeName {
			t.Fatalf("low-%d still on %s with the preemptor", i, p.Spec.NodeName)
		}
	}
	if victims != 1 {
		t.Fatalf("%d low-priority pods were evicted, want exactly 1", victims)
	}
	if m := scrape(t, s); !strings.Contains(m, "scheduler_preemption_attempts_total") || !strings.Contains(m, `scheduler_pod_scheduling_attempts_count`) {
		t.Fatalf("preemption / attempts metrics missing:\n%s", grepLines(m, "preemption"))
	}
	if p.Status.NominatedNodeName != "" && p.Status.NominatedNodeName != p.Spec.NodeName {
		t.Fatalf("high nominated to %s but bound to %s", p.Status.NominatedNodeName, p.Spec.NodeName)
	}
	// The second high pod preempts the other low pod; a third finds nothing lower.
	c.createPod("high-2", priority(100), requests("3", "64Mi"))
	c.waitPod("high-2", "bound after preemption", bound)
	c.createPod("high-3", priority(100), requests("3", "64Mi"))
	p = c.waitPod("high-3", "unschedulable", func(p *v1.Pod) bool { return strings.Contains(schedMessage(p), "preemption:") })
	if want := "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."; schedMessage(p) != want {
		t.Fatalf("high-3: message %q, want %q", schedMessage(p), want)
	}
}

const secondProfile = `
scheduler:
  profiles:
  - schedulerName: default-scheduler
  - schedulerName: packer
    plugins:
      score:
        disabled: [{name: "*"}]
        enabled: [{name: NodeResourcesFit, weight: 1}]
    pluginConfig:
    - name: NodeResourcesFit
      args: {scoringStrategy: {type: MostAllocated}}
`

func TestConfigReload(t *testing.T) {
	c := newCluster(t, 3)
	dir := t.TempDir()
	file := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(file, []byte("apiserver: {anything: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := c.startScheduler(scheduler.Options{ConfigFile: file})
	c.createPod("packed-0", requests("100m", "64Mi"), func(p *v1.Pod) { p.Spec.SchedulerName = "packer" })
	time.Sleep(500 * time.Millisecond) // not a timing assertion: gives a wrong scheduler the chance to act
	if p, _ := c.client.CoreV1().Pods("default").Get(c.ctx, "packed-0", metav1.GetOptions{}); p == nil || bound(p) {
		t.Fatalf("a pod for an unknown profile was bound")
	}
	// Editors replace files by rename: do the same.
	writeRename := func(content string) {
		tmp := filepath.Join(dir, ".wasmkube.yaml.tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	writeRename(secondProfile)
	first := c.waitPod("packed-0", "bound by the reloaded packer profile", bound)
	// MostAllocated packs: the next pods go where the first went.
	for i := 1; i < 3; i++ {
		name := fmt.Sprintf("packed-%d", i)
		c.createPod(name, requests("100m", "64Mi"), func(p *v1.Pod) { p.Spec.SchedulerName = "packer" })
		if p := c.waitPod(name, "bound", bound); p.Spec.NodeName != first.Spec.NodeName {
			t.Fatalf("%s on %s, want %s (MostAllocated)", name, p.Spec.NodeName, first.Spec.NodeName)
		}
	}

	// A bad config is refused, names the problem, and the packer profile stays.
	writeRename(strings.Replace(secondProfile, "NodeResourcesFit, weight", "NoSuchPlugin, weight", 1))
	err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := c.client.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedConfigReload" && e.Type == v1.EventTypeWarning && strings.Contains(e.Message, `unknown plugin "NoSuchPlugin"`) &&
				e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == "wasmkube-scheduler" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no FailedConfigReload event naming the unknown plugin: %v", err)
	}
	if got := s.Profiles(); len(got) != 2 || got[1] != "packer" {
		t.Fatalf("profiles after a bad reload: %v, want the last good ones", got)
	}
	c.createPod("packed-3", requests("100m", "64Mi"), func(p *v1.Pod) { p.Spec.SchedulerName = "packer" })
	if p := c.waitPod("packed-3", "bound", bound); p.Spec.NodeName != first.Spec.NodeName {
		t.Fatalf("packed-3 on %s, want %s: the packer profile should still be in force", p.Spec.NodeName, first.Spec.NodeName)
	}
	for _, bad := range []struct{ cfg, want string }{
		{"scheduler: {profiles: [{schedulerName: x, plugin: {}}]}", `unknown field "plugin"`},
		{"scheduler: {parallelism: -1}", "scheduler.parallelism"},
		{"scheduler: {profiles: [{schedulerName: x, pluginConfig: [{name: NodeResourcesFit, args: {nope: 1}}]}]}", `unknown field "nope"`},
		{"scheduler: [", "invalid YAML"},
	} {
		if err := s.Reload([]byte(bad.cfg)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Reload(%q) = %v, want an error containing %q", bad.cfg, err, bad.want)
		}
	}
	metrics := scrape(t, s)
	if !strings.Contains(metrics, `wasmkube_scheduler_config_reloads_total{result="failure"} 5`) ||
		!strings.Contains(metrics, `wasmkube_scheduler_config_reloads_total{result="success"} 1`) {
		t.Fatalf("reload metrics wrong:\n%s", grepLines(metrics, "config_reloads"))
	}
}

func TestLeaderElectionFailover(t *testing.T) {
	c := newCluster(t, 2)
	opts := func(id string) scheduler.Options {
		return scheduler.Options{LeaderElect: true, Identity: id,
			LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond}
	}
	a, stopA := c.startScheduler(opts("a"))
	b, stopB := c.startScheduler(opts("b"))
	var leader, follower *scheduler.Scheduler
	var stopLeader context.CancelFunc
	err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if a.IsLeader() && b.IsLeader() {
			return false, fmt.Errorf("both schedulers lead at once")
		}
		switch {
		case a.IsLeader():
			leader, follower, stopLeader = a, b, stopA
		case b.IsLeader():
			leader, follower, stopLeader = b, a, stopB
		}
		return leader != nil, nil
	})
	if err != nil {
		t.Fatalf("leader election: %v", err)
	}
	c.createPod("before", requests("100m", "64Mi"))
	c.waitPod("before", "bound by the leader", bound)
	if follower.IsLeader() {
		t.Fatal("the follower leads too")
	}
	lease, err := c.client.CoordinationV1().Leases("kube-system").Get(c.ctx, "wasmkube-scheduler", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("lease: %v %+v", err, lease)
	}
	stopLeader()
	err = wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return follower.IsLeader(), nil
	})
	if err != nil {
		t.Fatalf("the follower did not take over: %v", err)
	}
	c.createPod("after", requests("100m", "64Mi"))
	c.waitPod("after", "bound by the new leader", bound)
	_ = leader
}

// TestLeaderLostAndRegained: a scheduler whose Lease another holder took stops
// scheduling and stands by (healthy), a pod created meanwhile waits in its queue, and
// when the other holder goes away the scheduler leads again (a second term) and binds it.
func TestLeaderLostAndRegained(t *testing.T) {
	c := newCluster(t, 1)
	s, _ := c.startScheduler(scheduler.Options{LeaderElect: true, Identity: "victim",
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond})
	err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return s.IsLeader(), nil
	})
	if err != nil {
		t.Fatalf("never led: %v", err)
	}
	c.createPod("first", requests("100m", "64Mi"))
	c.waitPod("first", "bound in the first term", bound)
	leases := c.client.CoordinationV1().Leases("kube-system")
	intrude := func() {
		l, err := leases.Get(c.ctx, "wasmkube-scheduler", metav1.GetOptions{})
		if err == nil {
			id, now := "intruder", metav1.NowMicro()
			l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.AcquireTime = &id, &now, &now
			_, _ = leases.Update(c.ctx, l, metav1.UpdateOptions{})
		}
	}
	err = wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		intrude()
		return !s.IsLeader() && s.Status().Phase() == leaderelect.Standby, nil
	})
	if err != nil {
		t.Fatalf("still leading (phase %s) while another holder owns the Lease: %v", s.Status().Phase(), err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("a standby scheduler must be healthy: %v", err)
	}
	c.createPod("during", requests("100m", "64Mi"))
	for range 10 {
		intrude()
		time.Sleep(100 * time.Millisecond)
	}
	p, err := c.client.CoreV1().Pods("default").Get(c.ctx, "during", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		t.Fatal("a standby scheduler bound a pod")
	}
	// The intruder stops renewing: the scheduler takes the Lease back and binds the pod.
	c.waitPod("during", "bound in the second term", bound)
	if terms, _ := s.Status().Terms(); terms != 2 {
		t.Fatalf("%d terms, want 2", terms)
	}
	if !s.IsLeader() {
		t.Fatal("bound, but IsLeader is false")
	}
}

func scrape(t *testing.T, s *scheduler.Scheduler) string {
	t.Helper()
	rec := &strings.Builder{}
	w := &respWriter{b: rec, h: map[string][]string{}}
	req, _ := httpRequest()
	s.MetricsHandler().ServeHTTP(w, req)
	return rec.String()
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestNoNodes(t *testing.T) {
	c := newCluster(t, 0)
	c.startScheduler(scheduler.Options{})
	c.createPod("lonely", requests("100m", "64Mi"))
	p := c.waitPod("lonely", "unschedulable", unschedulable)
	if schedMessage(p) != "no nodes available to schedule pods" {
		t.Fatalf("message %q", schedMessage(p))
	}
	c.hollow(c.ctx, 1, "late-")
	if p := c.waitPod("lonely", "bound once a node registered", bound); p.Spec.NodeName != "late-0" {
		t.Fatalf("lonely on %s", p.Spec.NodeName)
	}
}

func TestDefaultSpreadFromService(t *testing.T) {
	c := newCluster(t, 6)
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{{Port: 80}}}}
	if _, err := c.client.CoreV1().Services("default").Create(c.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Only PodTopologySpread scores, so the spread comes from its system defaults.
	c.startScheduler(scheduler.Options{Config: []byte(`
scheduler:
  profiles:
  - schedulerName: default-scheduler
    plugins:
      score: {disabled: [{name: "*"}], enabled: [{name: PodTopologySpread}]}
`)})
	zones := map[string]int{}
	hosts := map[string]int{}
	for i := range 6 {
		name := fmt.Sprintf("web-%d", i)
		c.createPod(name, labels("app", "web"), requests("100m", "64Mi"))
		p := c.waitPod(name, "bound", bound)
		n, err := c.client.CoreV1().Nodes().Get(c.ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zones[n.Labels[v1.LabelTopologyZone]]++
		hosts[n.Name]++
	}
	for z, n := range zones {
		if n != 2 {
			t.Fatalf("zones %v (hosts %v): want 2 web pods in each zone (%s has %d)", zones, hosts, z, n)
		}
	}
	for h, n := range hosts {
		if n != 1 {
			t.Fatalf("hosts %v: want one web pod per node (%s has %d)", hosts, h, n)
		}
	}
}
