package storage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// etcdBinary is Debian's etcd-server, installed by scripts/deps.sh.
const etcdBinary = "/usr/bin/etcd"

// backendFactory starts a Backend for one test; cfg's zero fields get defaults.
type backendFactory func(t testing.TB, cfg Config) *Backend

func embeddedFactory(t testing.TB, cfg Config) *Backend {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	return openBackend(t, cfg)
}

func openBackend(t testing.TB, cfg Config) *Backend {
	t.Helper()
	if cfg.CompactionInterval == 0 {
		cfg.CompactionInterval = -1 // tests that compact say so
	}
	b, err := NewBackend(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewBackend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// externalFactory starts a separate etcd process on free loopback ports with its own
// data dir and connects a Backend to it.
func externalFactory(t testing.TB, cfg Config) *Backend {
	t.Helper()
	cfg.Endpoints = []string{startExternalEtcd(t)}
	return openBackend(t, cfg)
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startExternalEtcd runs etcdBinary and returns its client URL once it answers. With
// tlsArgs (certificate flags) the client URL is https.
func startExternalEtcd(t testing.TB, tlsArgs ...string) string {
	t.Helper()
	if _, err := os.Stat(etcdBinary); err != nil {
		t.Fatalf("external etcd tests need %s (Debian package etcd-server; run scripts/deps.sh): %v", etcdBinary, err)
	}
	var lastErr string
	for attempt := 0; attempt < 5; attempt++ {
		dir := t.TempDir()
		scheme := "http"
		if len(tlsArgs) > 0 {
			scheme = "https"
		}
		client := fmt.Sprintf("%s://127.0.0.1:%d", scheme, freePort(t))
		peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		var logs bytes.Buffer
		cmd := exec.Command(etcdBinary,
			"--name", "wasmkube-test", "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", "wasmkube-test="+peer,
			"--max-request-bytes", strconv.Itoa(maxObjectBytes),
			"--logger", "zap", "--log-outputs", "stderr", "--log-level", "error")
		cmd.Args = append(cmd.Args, tlsArgs...)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", etcdBinary, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Wait until the client port accepts connections, or the process exits (for
		// example because another process took a port between freePort and now).
		ready := false
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			select {
			case err := <-exited:
				lastErr = fmt.Sprintf("etcd exited: %v\n%s", err, logs.String())
				deadline = time.Time{}
				continue
			default:
			}
			if c, err := net.Dial("tcp", client[len(scheme+"://"):]); err == nil {
				c.Close()
				ready = true
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if ready {
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			return client
		}
		cmd.Process.Kill()
	}
	t.Fatalf("could not start external etcd %s: %s", etcdBinary, lastErr)
	return ""
}

func newPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-" + ns + "-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func podStore(b *Backend) Interface {
	return b.ForResource("pods", func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} })
}

func rvOf(t testing.TB, obj runtime.Object) int64 {
	t.Helper()
	acc, err := meta.CommonAccessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseInt(acc.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion of %T: %v", obj, err)
	}
	return rv
}

func mustCreate(t testing.TB, s Interface, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := s.Create(context.Background(), Key("pods", p.Namespace, p.Name), p)
	if err != nil {
		t.Fatalf("create %s/%s: %v", p.Namespace, p.Name, err)
	}
	return out.(*corev1.Pod)
}

// mustUpdate applies mutate to the pod stored at key, failing the test on an error.
func mustUpdate(t testing.TB, s Interface, key string, mutate func(*corev1.Pod)) {
	t.Helper()
	if _, err := s.GuaranteedUpdate(context.Background(), key, nil, func(cur runtime.Object) (runtime.Object, error) {
		mutate(cur.(*corev1.Pod))
		return cur, nil
	}); err != nil {
		t.Fatalf("update %s: %v", key, err)
	}
}

// mustDelete deletes key unconditionally, failing the test on an error.
func mustDelete(t testing.TB, s Interface, key string) {
	t.Helper()
	if _, err := s.Delete(context.Background(), key, nil); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}

// nextEvent returns the next event or fails after a generous wait (a hang, not a
// performance assertion).
func nextEvent(t testing.TB, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed while waiting for an event")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatalf("no watch event within 30s")
	}
	return watch.Event{}
}

// expectEvent reads the next non-bookmark event and checks its type and object name.
func expectEvent(t testing.TB, w watch.Interface, typ watch.EventType, name string) *corev1.Pod {
	t.Helper()
	for {
		ev := nextEvent(t, w)
		if ev.Type == watch.Bookmark {
			continue
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("event %s carries %T, want *corev1.Pod", ev.Type, ev.Object)
		}
		if ev.Type != typ || p.Name != name {
			t.Fatalf("got event %s %s, want %s %s", ev.Type, p.Name, typ, name)
		}
		return p
	}
}

func names(list runtime.Object) []string {
	var out []string
	for _, p := range list.(*corev1.PodList).Items {
		out = append(out, p.Name)
	}
	return out
}

// etcdWatchers reads etcd's own count of watchers from the /metrics endpoint of the
// etcd process at endpoint.
func etcdWatchers(t testing.TB, endpoint string) int {
	t.Helper()
	resp, err := http.Get(endpoint + "/metrics")
	if err != nil {
		t.Fatalf("scrape etcd metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd_debugging_mvcc_watcher_total "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("etcd metric line %q: %v", line, err)
			}
			return int(n)
		}
	}
	t.Fatalf("etcd at %s exports no etcd_debugging_mvcc_watcher_total", endpoint)
	return 0
}

// waitEtcdWatchers waits until etcd serves exactly want watchers (watch creation is
// asynchronous); failing after a generous wait means the count never matched.
func waitEtcdWatchers(t testing.TB, endpoint string, want int) {
	t.Helper()
	got := -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = etcdWatchers(t, endpoint); got == want {
			return
		}
	}
	t.Fatalf("etcd serves %d watchers, want %d", got, want)
}
