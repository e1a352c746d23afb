package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/kubelet/overlay"
)

// The test's own resources: host bridge wkh4t (namespaces wkh4t-2, wkh4t-3), host
// network 172.30.64.0/24, pod bridge wkh4p0 of the first node, cluster CIDR 10.64.0.0/16,
// API port 46443. Nothing leaves the machine.
const (
	upTestBridge = "wkh4t"
	upTestPort   = "46443"
)

// TestUpNodes runs `wasmkube up --nodes 3` (three hosts: this process's network
// namespace and two of up's own) and checks, with kubectl as a user would: every node
// Ready with its own pod subnet from node IPAM; pods on every host reach each other by IP
// (ping and TCP); exec and logs into a pod on each host; a host whose kubelet stops
// (SIGSTOP: its containers keep running, as on a hung host) goes NotReady and its pod is
// recreated on another host, and when the kubelet resumes the node is Ready again and its
// stale pod gone; Ctrl-C leaves no namespace, link, route or mount behind.
// It runs once per network backend, vxlan and host-gw.
func TestUpNodes(t *testing.T) {
	for _, backend := range []string{overlay.BackendVXLAN, overlay.BackendHostGW} {
		t.Run(backend, func(t *testing.T) { testUpNodes(t, backend) })
	}
}

func testUpNodes(t *testing.T, backend string) {
	// A short node grace (twice the kubelet's 10 s lease renewal) and toleration, so that
	// the failed host's pod moves within half a minute.
	u := startUp(t, testUpOptions{Name: "wkh4", Nodes: 3, Port: upTestPort, HostNetwork: "172.30.64.0/24",
		ClusterCIDR: "10.64.0.0/16", Backend: backend,
		Config: "controller:\n  nodeMonitorGracePeriod: 20s\n  defaultTolerationSeconds: 2\n"})
	client, kubectl, data := u.Client, u.kubectl, u.Data
	ctx := context.Background()
	nodes := []string{"wkh4", "wkh4-2", "wkh4-3"}

	// Every node Ready, each with a pod subnet of its own out of the cluster CIDR.
	waitUntil(t, "three Ready nodes with pod subnets", func() bool {
		seen := map[string]bool{}
		for _, n := range nodes {
			node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || !nodeReady(node) || !strings.HasPrefix(node.Spec.PodCIDR, "10.64.") || seen[node.Spec.PodCIDR] {
				return false
			}
			seen[node.Spec.PodCIDR] = true
		}
		return true
	})

	// One web pod per node (a spread Deployment), each answering with its own name.
	replicas := int32(3)
	honor := corev1.NodeInclusionPolicyHonor
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// Honor: a tainted (failed) node is no domain of the spread, so the
					// failed host's pod may land beside another.
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
						WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
						NodeTaintsPolicy: &honor}},
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{Name: "web", Image: "wasmkube.local/busybox", ImagePullPolicy: corev1.PullNever,
						Command: []string{"sh", "-c", "echo started-$(hostname); mkdir -p /www; hostname > /www/index.html; exec httpd -f -p 8080 -h /www"}}},
				},
			},
		},
	}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods map[string]corev1.Pod // node -> its running web pod
	runningWeb := func(exclude string) bool {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false
		}
		pods = map[string]corev1.Pod{}
		n := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.Spec.NodeName == exclude {
				continue
			}
			pods[p.Spec.NodeName] = p
			n++
		}
		return n == 3
	}
	waitUntil(t, "a running web pod on each node", func() bool { return runningWeb("") && len(pods) == 3 })

	// Pod to pod by IP across hosts, ICMP and TCP; exec and logs on every host.
	for _, from := range nodes {
		src := pods[from]
		if out, err := kubectl("logs", src.Name); err != nil || !strings.Contains(out, "started-"+src.Name) {
			t.Errorf("kubectl logs %s (on %s): %v: %q", src.Name, from, err, out)
		}
		for _, to := range nodes {
			dst := pods[to]
			if out, err := kubectl("exec", src.Name, "--", "ping", "-c1", "-W5", dst.Status.PodIP); err != nil {
				t.Errorf("ping from %s (%s) to %s (%s, on %s): %v: %s", src.Name, from, dst.Status.PodIP, dst.Name, to, err, out)
			}
			out, err := kubectl("exec", src.Name, "--", "timeout", "10", "wget", "-qO-", "http://"+dst.Status.PodIP+":8080/")
			if err != nil || strings.TrimSpace(out) != dst.Name {
				t.Errorf("wget from %s (%s) to %s (on %s): %v: %q, want %q", src.Name, from, dst.Status.PodIP, to, err, out, dst.Name)
			}
		}
	}
	if t.Failed() {
		return
	}

	// Host wkh4-3's kubelet stops: its node goes NotReady and its pod is recreated on the
	// other hosts.
	pid := kubeletPID(t, data, "wkh4-3")
	stale := pods["wkh4-3"].Name
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	waitUntil(t, "node wkh4-3 not Ready", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "wkh4-3", metav1.GetOptions{})
		return err == nil && !nodeReady(n)
	})
	waitUntil(t, "three running web pods on wkh4 and wkh4-2", func() bool {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false
		}
		n := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "wkh4-3" {
				n++
			}
		}
		return n == 3
	})

	// The kubelet resumes: the node is Ready again and its stale pod is gone.
	resumed = true
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "node wkh4-3 Ready again and its stale pod gone", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "wkh4-3", metav1.GetOptions{})
		if err != nil || !nodeReady(n) {
			return false
		}
		_, err = client.CoreV1().Pods("default").Get(ctx, stale, metav1.GetOptions{})
		return err != nil
	})

	// Ctrl-C: nothing of up's hosts is left.
	u.Stop()
	if h, err := netns.GetFromName(upTestBridge + "-2"); err == nil {
		h.Close()
		t.Errorf("network namespace %s-2 left behind", upTestBridge)
	}
	links, _ := netlink.LinkList()
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, "wkh4") {
			t.Errorf("link %s left behind", l.Attrs().Name)
		}
	}
	routes, _ := netlink.RouteList(nil, netlink.FAMILY_V4)
	for _, r := range routes {
		if r.Protocol == overlay.RouteProtocol && r.Dst != nil && strings.HasPrefix(r.Dst.String(), "10.64.") {
			t.Errorf("route %s left behind", r.Dst)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(mounts), "\n") {
		if strings.Contains(l, data) {
			t.Errorf("mount left behind: %s", l)
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kubeletPID finds the process of the named node's kubelet among up's children.
func kubeletPID(t *testing.T, data, node string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && args[1] == "kubelet" && strings.Contains(string(b), "\x00--node-name\x00"+node+"\x00") &&
			strings.Contains(string(b), data) {
			var pid int
			fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
			return pid
		}
	}
	t.Fatalf("no kubelet process of node %s", node)
	return 0
}

// waitUntil polls cond until it holds; a test waits for behaviour, not for speed.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
