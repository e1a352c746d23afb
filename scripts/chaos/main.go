// Command chaos is wasmkube's fault suite (`make chaos`): it runs bin/wasmkube server
// processes on this machine (loopback only) and breaks them, printing for each fault
// what was acknowledged, what was lost, the errors by code and the recovery time.
//
//	kill9     kill -9 of a server (embedded etcd) in the middle of writes, restart on the
//	          same data dir; every acknowledged ConfigMap must be there afterwards
//	failover  two servers on one etcd (Debian's /usr/bin/etcd, started here); kill -9 of
//	          the one whose scheduler leads; time until a new pod is bound by the other
//
// The etcd leader and quorum faults are go tests (cmd/wasmkube TestServerLeadershipSurvives
// EtcdQuorumLoss, core/apiserver's leader change test). Each fault's request loop is
// bounded in time and ends by itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

func main() {
	bin := flag.String("bin", "bin/wasmkube", "the wasmkube binary")
	only := flag.String("only", "", "run only this fault (kill9 or failover)")
	writers := flag.Int("writers", 8, "concurrent writers in kill9")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %v", flag.Args()))
	}
	work, err := os.MkdirTemp("", "wasmkube-chaos-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(work)
	ok := true
	if *only == "" || *only == "kill9" {
		ok = kill9(*bin, filepath.Join(work, "kill9"), *writers) && ok
	}
	if *only == "" || *only == "failover" {
		ok = failover(*bin, filepath.Join(work, "failover")) && ok
	}
	if *only != "" && *only != "kill9" && *only != "failover" {
		fail(fmt.Errorf("-only %q: want kill9 or failover", *only))
	}
	if !ok {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chaos:", err)
	os.Exit(2)
}

// server is one `wasmkube server` process.
type server struct {
	cmd  *exec.Cmd
	dir  string
	addr string
}

func startServer(bin, dir, addr string, extra ...string) (*server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	args := append([]string{"server", "--data-dir", dir, "--listen", addr, "--metrics-addr", ""}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); logf.Close() }()
	return &server{cmd: cmd, dir: dir, addr: addr}, nil
}

func (s *server) kill() { _ = s.cmd.Process.Signal(syscall.SIGKILL) }

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for s.cmd.ProcessState == nil {
			time.Sleep(50 * time.Millisecond)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		s.kill()
	}
}

// client waits for the admin kubeconfig and /readyz, up to a minute.
func (s *server) client() (*rest.Config, kubernetes.Interface, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dir, "admin.kubeconfig"))
		if err == nil {
			cfg.Host = "https://" + s.addr
			cfg.QPS, cfg.Burst = 1000, 1000
			cfg.Timeout = 10 * time.Second
			c, cerr := kubernetes.NewForConfig(cfg)
			if cerr == nil {
				if _, err = c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background()); err == nil {
					return cfg, c, nil
				}
			} else {
				err = cerr
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("server %s not ready: %v (log: %s)", s.addr, err, filepath.Join(s.dir, "server.log"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// codeOf names an error for the errors-by-code table.
func codeOf(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Code != 0 {
		return fmt.Sprint(se.Status().Code)
	}
	switch {
	case strings.Contains(err.Error(), "connection refused"):
		return "conn-refused"
	case strings.Contains(err.Error(), "EOF"), strings.Contains(err.Error(), "connection reset"):
		return "conn-reset"
	case strings.Contains(err.Error(), "timeout"), strings.Contains(err.Error(), "deadline"):
		return "timeout"
	}
	return "other"
}

type tally struct {
	mu    sync.Mutex
	acked []string
	codes map[string]int
}

func (t *tally) ack(name string) { t.mu.Lock(); t.acked = append(t.acked, name); t.mu.Unlock() }
func (t *tally) err(e error)     { t.mu.Lock(); t.codes[codeOf(e)]++; t.mu.Unlock() }

func (t *tally) codesString() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.codes) == 0 {
		return "none"
	}
	var keys []string
	for k := range t.codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, t.codes[k]))
	}
	return strings.Join(parts, " ")
}

// kill9 writes ConfigMaps from several goroutines, kills the server with SIGKILL after
// 4 s of writes, restarts it on the same data dir and address, writes 3 s more, and
// checks that every acknowledged ConfigMap exists.
func kill9(bin, dir string, writers int) bool {
	fmt.Println("== kill9: kill -9 of the server mid-write, restart on the same data dir")
	addr := freeAddr()
	srv, err := startServer(bin, dir, addr, "--apiserver-only")
	if err != nil {
		fail(err)
	}
	_, c, err := srv.client()
	if err != nil {
		fail(err)
	}
	t := &tally{codes: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var firstOKAfter sync.Once
	var restartedAt time.Time
	var recovered time.Duration
	var restartMu sync.Mutex
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				_, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}, metav1.CreateOptions{})
				if err != nil {
					if ctx.Err() == nil {
						t.err(err)
						time.Sleep(20 * time.Millisecond)
					}
					continue
				}
				t.ack(name)
				restartMu.Lock()
				if !restartedAt.IsZero() {
					firstOKAfter.Do(func() { recovered = time.Since(restartedAt) })
				}
				restartMu.Unlock()
			}
		}(w)
	}
	time.Sleep(4 * time.Second)
	t.mu.Lock()
	before := len(t.acked)
	t.mu.Unlock()
	srv.kill()
	killedAt := time.Now()
	time.Sleep(500 * time.Millisecond)
	restartMu.Lock()
	srv, err = startServer(bin, dir, addr, "--apiserver-only")
	restartedAt = time.Now()
	restartMu.Unlock()
	if err != nil {
		fail(err)
	}
	if _, _, err := srv.client(); err != nil {
		fail(err)
	}
	time.Sleep(3 * time.Second)
	cancel()
	wg.Wait()
	defer srv.stop()
	_, c2, err := srv.client()
	if err != nil {
		fail(err)
	}
	list, err := c2.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		fail(err)
	}
	have := map[string]bool{}
	for _, cm := range list.Items {
		have[cm.Name] = true
	}
	lost := 0
	for _, n := range t.acked {
		if !have[n] {
			lost++
		}
	}
	fmt.Printf("   acknowledged %d (%d before the kill), lost %d, errors by code: %s\n", len(t.acked), before, lost, t.codesString())
	fmt.Printf("   down %.1f s (killed -> restarted); first acknowledged write %.2f s after the restart\n",
		restartedAt.Sub(killedAt).Seconds(), recovered.Seconds())
	return lost == 0 && len(t.acked) > before
}

// failover runs two servers on one etcd, finds the one whose scheduler holds the Lease,
// kills it with SIGKILL and measures until a pod created then is bound by the other.
func failover(bin, dir string) bool {
	fmt.Println("== failover: two servers on one etcd, kill -9 of the scheduler's leader")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fail(err)
	}
	clientAddr, peerAddr := freeAddr(), freeAddr()
	etcd := exec.Command("/usr/bin/etcd", "--name", "chaos", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://"+clientAddr, "--advertise-client-urls", "http://"+clientAddr,
		"--listen-peer-urls", "http://"+peerAddr, "--initial-advertise-peer-urls", "http://"+peerAddr,
		"--initial-cluster", "chaos=http://"+peerAddr)
	etcdLog, _ := os.Create(filepath.Join(dir, "etcd.log"))
	etcd.Stdout, etcd.Stderr = etcdLog, etcdLog
	if err := etcd.Start(); err != nil {
		fail(fmt.Errorf("start etcd: %w", err))
	}
	defer func() { _ = etcd.Process.Kill(); _ = etcd.Wait() }()
	ep := "http://" + clientAddr
	a, err := startServer(bin, filepath.Join(dir, "a"), freeAddr(), "--etcd-endpoints", ep)
	if err != nil {
		fail(err)
	}
	defer a.stop()
	_, ca, err := a.client()
	if err != nil {
		fail(err)
	}
	// The second server needs the first one's identity key (docs/security.md).
	key, err := os.ReadFile(filepath.Join(a.dir, "identity.key"))
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "b"), 0o700); err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b", "identity.key"), key, 0o600); err != nil {
		fail(err)
	}
	b, err := startServer(bin, filepath.Join(dir, "b"), freeAddr(), "--etcd-endpoints", ep)
	if err != nil {
		fail(err)
	}
	defer b.stop()
	cfgB, cb, err := b.client()
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- hollow.Run(ctx, cfgB, hollow.Options{Count: 2, Prefix: "chaos-", Ready: ready,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	select {
	case <-ready:
	case err := <-done:
		fail(fmt.Errorf("hollow nodes: %w", err))
	}
	bound := func(c kubernetes.Interface, name string, limit time.Duration) (time.Duration, error) {
		start := time.Now()
		if _, err := c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "wasmkube.local/busybox:latest"}}}}, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
		for time.Since(start) < limit {
			p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err == nil && p.Spec.NodeName != "" {
				return time.Since(start), nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return 0, fmt.Errorf("pod %s not bound within %s", name, limit)
	}
	if _, err := bound(ca, "before", time.Minute); err != nil {
		fail(err)
	}
	lease, err := cb.CoordinationV1().Leases("kube-system").Get(ctx, "wasmkube-scheduler", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		fail(fmt.Errorf("scheduler lease: %v", err))
	}
	holder := *lease.Spec.HolderIdentity
	leader, sc := a, cb
	if leaderOf(holder, a, b) == b {
		leader, sc = b, ca
	}
	fmt.Printf("   scheduler leader %s (server %s); killing it\n", holder, leader.addr)
	leader.kill()
	killedAt := time.Now()
	took, err := bound(sc, "after", 60*time.Second)
	recovery := time.Since(killedAt)
	if err != nil {
		fmt.Printf("   FAILED: %v\n", err)
		return false
	}
	fmt.Printf("   pod created right after the kill bound in %.1f s (lease settings allow up to 17 s)\n", took.Seconds())
	fmt.Printf("   recovery time (kill -> pod bound) %.1f s\n", recovery.Seconds())
	cancel()
	<-done
	return recovery <= 17*time.Second+2*time.Second
}

// leaderOf is the server whose log says it became the leader as holder.
func leaderOf(holder string, a, b *server) *server {
	for _, s := range []*server{a, b} {
		log, err := os.ReadFile(filepath.Join(s.dir, "server.log"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "is the leader") && strings.Contains(line, holder) {
				return s
			}
		}
	}
	fail(fmt.Errorf("no server log says %s is the scheduler's leader", holder))
	return nil
}
