package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUpNodesKilledKubelet runs `wasmkube up --nodes 2`, starts a pod on the second host,
// kills that host's kubelet with SIGKILL (it cannot clean up: its pod's shim and container
// keep running, their mounts stay), then stops up with Ctrl-C, and checks that nothing of
// that host is left: no shim or container process, no mount under its directory, no
// network namespace. Its own resources: host bridge wkh1t (namespace wkh1t-2), host
// network 172.30.81.0/24, pod bridge wkh1p0, cluster CIDR 10.81.0.0/16, API port 46600.
func TestUpNodesKilledKubelet(t *testing.T) {
	u := startUp(t, testUpOptions{Name: "wkh1", Nodes: 2, Port: "46600", HostNetwork: "172.30.81.0/24",
		ClusterCIDR: "10.81.0.0/16", Warm: 1, StopWithin: 4 * time.Minute})
	client, data, hostDir := u.Client, u.Data, u.HostDir("wkh1-2")
	ctx := context.Background()
	waitUntil(t, "node wkh1-2 Ready", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "wkh1-2", metav1.GetOptions{})
		return err == nil && nodeReady(n)
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": "wkh1-2"},
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "web", Image: "wasmkube.local/busybox", ImagePullPolicy: corev1.PullNever,
				Command: []string{"httpd", "-f", "-p", "8080"}}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "pod web running on wkh1-2", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == "wkh1-2"
	})

	// SIGKILL: the kubelet removes nothing; the host's shims (the pod's and the warm
	// sandbox's) and their containers run on.
	if err := syscall.Kill(kubeletPID(t, data, "wkh1-2"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "up to see the kubelet gone", func() bool { return strings.Contains(u.Log(), "a host's kubelet exited") })
	left := hostProcesses(hostDir)
	if len(left) == 0 {
		t.Fatalf("no shim of host wkh1-2 running after its kubelet was killed: the test shows nothing")
	}
	if !strings.Contains(mountsUnder(hostDir), hostDir) {
		t.Fatalf("no mount under %s after its kubelet was killed: the test shows nothing", hostDir)
	}

	u.Stop()
	for _, p := range left {
		if running(p) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline")
			t.Errorf("process %d of host wkh1-2 left running: %s", p.pid, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	if m := mountsUnder(hostDir); m != "" {
		t.Errorf("mounts left under %s:\n%s", hostDir, m)
	}
	if h, err := netns.GetFromName("wkh1t-2"); err == nil {
		h.Close()
		t.Errorf("network namespace wkh1t-2 left behind")
	}
	if !strings.Contains(u.Log(), "cleaning up after a host's dead kubelet") {
		t.Errorf("up did not say it cleaned up after the dead kubelet")
	}
}

// proc is a process as /proc/<pid>/stat showed it: its start time tells a reused pid apart.
type proc struct {
	pid   int
	start string
}

// procStat is a process's state and start time ("" when it is gone).
func procStat(pid int) (state, start string, ppid int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", 0
	}
	// pid (comm) state ppid ... starttime (field 22): comm may hold spaces, so read after its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return "", "", 0
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], f[19], ppid
}

// running says whether p still runs: not gone, not a zombie awaiting its parent, not
// another process under a reused pid.
func running(p proc) bool {
	state, start, _ := procStat(p.pid)
	return state != "" && state != "Z" && start == p.start
}

// hostProcesses are the containerd shims whose address is under dir (a host's containerd)
// and every process below them (the pods' pause and containers).
func hostProcesses(dir string) []proc {
	parent, started := map[int]int{}, map[int]string{}
	var shims []int
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		state, start, ppid := procStat(pid)
		if state == "" || state == "Z" {
			continue
		}
		parent[pid], started[pid] = ppid, start
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		args := strings.Split(string(cmd), "\x00")
		if strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") && strings.Contains(string(cmd), dir) {
			shims = append(shims, pid)
		}
	}
	isShim := map[int]bool{}
	var out []proc
	for _, p := range shims {
		isShim[p] = true
		out = append(out, proc{p, started[p]})
	}
	for pid := range parent {
		for a, n := parent[pid], 0; a > 1 && n < 32; a, n = parent[a], n+1 {
			if isShim[a] {
				out = append(out, proc{pid, started[pid]})
				break
			}
		}
	}
	return out
}

// mountsUnder is the lines of this mount namespace's mountinfo whose mount point is under dir.
func mountsUnder(dir string) string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
