package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// testUpOptions name a test's own `wasmkube up --nodes N`: every host, bridge, range and port
// is the test's, so tests run side by side and nothing leaves the machine. The first node
// is Name, the others Name-2, Name-3...; the host bridge is Name+"t" (its namespaces
// Name+"t-2"...), the first node's pod bridge Name+"p0".
type testUpOptions struct {
	Name        string
	Nodes       int
	Port        string // the API server's port on 127.0.0.1
	HostNetwork string // the hosts' addresses
	ClusterCIDR string // the pods' addresses
	Backend     string // --network-backend; "" for up's default
	Config      string // the config file's contents; "" for none
	Warm        int    // --warm-sandboxes
	StopWithin  time.Duration
}

// upCluster is a running `wasmkube up`, started as a user would start it.
type upCluster struct {
	t          *testing.T
	Data       string
	Kubeconfig string
	Client     kubernetes.Interface
	hosts      []string
	log        lockedBuffer
	done       chan error
	stopWithin time.Duration
	stopped    bool
	cmd        *exec.Cmd
}

// startUp starts up and waits for its admin kubeconfig; the cluster stops (as on Ctrl-C)
// at the end of the test, or earlier through Stop, and a failed test logs the tail of up's
// and every extra host's kubelet log.
func startUp(t *testing.T, o testUpOptions) *upCluster {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("up --nodes makes network namespaces and runs containers: needs root")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not installed")
	}
	images, _ := filepath.Abs("../../bin/images")
	if _, err := os.Stat(filepath.Join(images, "busybox.tar")); err != nil {
		t.Fatalf("no busybox image archive in %s: run `make images`", images)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", o.Name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	u := &upCluster{t: t, Data: filepath.Join(dir, "data"), done: make(chan error, 1), stopWithin: o.StopWithin}
	if u.stopWithin == 0 {
		u.stopWithin = 3 * time.Minute
	}
	args := []string{"up", "--nodes", strconv.Itoa(o.Nodes), "--data-dir", u.Data,
		"--listen", "127.0.0.1:" + o.Port, "--metrics-addr", "", "--node-name", o.Name,
		"--host-network", o.HostNetwork, "--host-bridge", o.Name + "t", "--bridge", o.Name + "p0",
		"--cluster-cidr", o.ClusterCIDR, "--images-dir", images, "--warm-sandboxes", strconv.Itoa(o.Warm)}
	if o.Backend != "" {
		args = append(args, "--network-backend", o.Backend)
	}
	if o.Config != "" {
		cfg := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfg, []byte(o.Config), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", cfg)
	}
	for i := 2; i <= o.Nodes; i++ {
		u.hosts = append(u.hosts, o.Name+"-"+strconv.Itoa(i))
	}
	up := exec.Command(exe, args...)
	up.Env = append(os.Environ(), "WASMKUBE_TEST_RUN_MAIN=1")
	up.Stdout, up.Stderr = &u.log, &u.log
	up.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	u.cmd = up
	go func() { u.done <- up.Wait() }()
	t.Cleanup(func() {
		u.Stop()
		if t.Failed() {
			t.Logf("up's log:\n%s", tail(u.log.String(), 80))
			for _, n := range u.hosts {
				b, _ := os.ReadFile(u.HostDir(n) + "/kubelet.log")
				t.Logf("%s's kubelet log:\n%s", n, tail(string(b), 40))
			}
		}
	})

	u.Kubeconfig = filepath.Join(u.Data, "admin.kubeconfig")
	waitUntil(t, "up's admin kubeconfig", func() bool { _, err := os.Stat(u.Kubeconfig); return err == nil })
	rc, err := clientcmd.BuildConfigFromFlags("", u.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u.Client = kubernetes.NewForConfigOrDie(rc)
	return u
}

// Stop interrupts up as Ctrl-C does and waits for it to finish cleaning up; the end of
// the test does too.
func (u *upCluster) Stop() {
	if u.stopped {
		return
	}
	u.stopped = true
	_ = u.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-u.done:
	case <-time.After(u.stopWithin):
		_ = u.cmd.Process.Kill()
		<-u.done
		u.t.Errorf("up did not stop within %s of Ctrl-C", u.stopWithin)
	}
}

// Log is what up has printed so far.
func (u *upCluster) Log() string { return u.log.String() }

// HostDir is the data directory of one of up's extra hosts.
func (u *upCluster) HostDir(node string) string { return filepath.Join(u.Data, "nodes", node) }

// kubectl runs the real kubectl against the cluster.
func (u *upCluster) kubectl(args ...string) (string, error) {
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+u.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// lockedBuffer is a bytes.Buffer a test reads while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
