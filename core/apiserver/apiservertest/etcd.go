package apiservertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdStartTimeout bounds the wait for a member to report a leader after it started.
const etcdStartTimeout = 60 * time.Second

// EtcdCluster is a cluster of Debian's etcd (package etcd-server, which scripts/deps.sh
// installs) run by a test: each member on its own loopback ports with its data in a
// temporary directory, all stopped when the test ends. Members can be stopped and
// started again on the same data, to take quorum away and give it back.
//
//	etcd := apiservertest.StartEtcd(t, 3)
//	srv := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(etcd.Endpoints()...))
type EtcdCluster struct {
	t       testing.TB
	bin     string
	members []*etcdMember
}

type etcdMember struct {
	name, dir, client, peer string
	args                    []string
	logs                    *lockedBuffer
	cmd                     *exec.Cmd
	done                    chan struct{}
}

// StartEtcd starts an n-member etcd cluster and returns once every member is healthy
// (the cluster has a leader). It fails the test with a clear message when the etcd
// binary is missing.
func StartEtcd(t testing.TB, n int) *EtcdCluster {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("apiservertest: the etcd binary is required (Debian package etcd-server; scripts/deps.sh installs it): %v", err)
	}
	c := &EtcdCluster{t: t, bin: bin}
	var initial []string
	for i := range n {
		m := &etcdMember{name: fmt.Sprintf("e%d", i), dir: t.TempDir(), logs: &lockedBuffer{},
			client: "http://" + freeLoopbackAddr(t), peer: "http://" + freeLoopbackAddr(t)}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peer)
	}
	token := fmt.Sprintf("wasmkube-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	for _, m := range c.members {
		m.args = []string{"--name", m.name, "--data-dir", m.dir,
			"--listen-client-urls", m.client, "--advertise-client-urls", m.client,
			"--listen-peer-urls", m.peer, "--initial-advertise-peer-urls", m.peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", token}
	}
	t.Cleanup(func() {
		for i, m := range c.members {
			if m.cmd != nil {
				c.StopMember(i)
			}
			if t.Failed() {
				t.Logf("etcd member %s output (last 4 KiB):\n%s", m.name, m.logs.tail(4096))
			}
		}
	})
	// The members of a new cluster wait for each other: start them all, then wait.
	for i := range c.members {
		c.launch(i)
	}
	for i := range c.members {
		c.waitHealthy(i)
	}
	return c
}

// Endpoints are the members' client URLs.
func (c *EtcdCluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.client
	}
	return out
}

// StopMember stops member i (SIGTERM, as an operator or a supervisor would) and waits
// for its process to exit. Its data stays for StartMember.
func (c *EtcdCluster) StopMember(i int) {
	c.t.Helper()
	m := c.members[i]
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.cmd = nil
}

// KillMember kills member i with SIGKILL (a crash: no leadership transfer, requests in
// flight lost) and waits for its process to exit. Its data stays for StartMember.
func (c *EtcdCluster) KillMember(i int) {
	c.t.Helper()
	m := c.members[i]
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.done
	m.cmd = nil
}

// Leader is the index of the member that leads, as the running members report it (each
// member's status names the leader's ID). It fails the test after a minute without one.
func (c *EtcdCluster) Leader() int {
	c.t.Helper()
	deadline := time.Now().Add(etcdStartTimeout)
	for {
		ids := map[uint64]int{}
		var lead uint64
		for i, m := range c.members {
			if m.cmd == nil {
				continue
			}
			if id, leader, err := memberStatus(m.client); err == nil {
				ids[id] = i
				if leader != 0 {
					lead = leader
				}
			}
		}
		if i, ok := ids[lead]; ok && lead != 0 {
			return i
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("apiservertest: no etcd member leads after %s", etcdStartTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// memberStatus is a member's own ID and the ID of the leader it follows (0: none).
func memberStatus(endpoint string) (id, leader uint64, err error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		return 0, 0, err
	}
	return st.Header.MemberId, st.Leader, nil
}

// StartMember starts a stopped member again on its data and ports, and returns once it
// is healthy: for a cluster that had lost its quorum, once quorum is back.
func (c *EtcdCluster) StartMember(i int) {
	c.t.Helper()
	if c.members[i].cmd != nil {
		c.t.Fatalf("apiservertest: etcd member %d is running", i)
	}
	c.launch(i)
	c.waitHealthy(i)
}

func (c *EtcdCluster) launch(i int) {
	c.t.Helper()
	m := c.members[i]
	fmt.Fprintf(m.logs, "--- start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(c.bin, m.args...)
	cmd.Stdout, cmd.Stderr = m.logs, m.logs
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("apiservertest: start etcd member %s: %v", m.name, err)
	}
	m.cmd, m.done = cmd, make(chan struct{})
	done := m.done
	go func() { _ = cmd.Wait(); close(done) }()
}

// waitHealthy polls the member's /health until it reports a leader.
func (c *EtcdCluster) waitHealthy(i int) {
	c.t.Helper()
	m := c.members[i]
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(etcdStartTimeout)
	last := ""
	for {
		select {
		case <-m.done:
			c.t.Fatalf("apiservertest: etcd member %s exited:\n%s", m.name, m.logs.tail(4096))
		default:
		}
		resp, err := hc.Get(m.client + "/health")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(`"health":"true"`)) {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("apiservertest: etcd member %s not healthy after %s: %s", m.name, etcdStartTimeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeLoopbackAddr is a 127.0.0.1 port free at the time of the call.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lockedBuffer collects a process's output; exec copies into it from its own goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.b.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
