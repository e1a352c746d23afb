package kubelet_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
)

// kubectlRun runs kubectl with stdin and extra environment and returns stdout, stderr and
// the exit code (an error only when kubectl could not run).
func kubectlRun(t *testing.T, srv *apiservertest.Server, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", srv.KubeconfigPath}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// TestStreamingWithKubectl runs kubectl's daily loop against a real kubelet on containerd:
// exec (WebSocket v5 and the SPDY fallback, stdin, TTY, exit codes), cp both ways,
// port-forward to a server bound to the pod's loopback, attach through run -i --rm, and
// logs with --timestamps, --since-time, --tail and --limit-bytes. One cluster, subtests.
func TestStreamingWithKubectl(t *testing.T) {
	srv := apiservertest.Start(t)
	// Pods outlive this first kubelet (the kubelet-restart subtest); the second cleans up.
	n := &node{name: "node-stream", root: t.TempDir(), daemon: nodetest.Containerd(t)}
	n.net = nodetest.Network(t, filepath.Join(n.root, "cni"))
	startKubelet(t, srv, n, false)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")

	web := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		// No service account token volume: this test starts no controller to publish the
		// kube-root-ca.crt ConfigMap it needs.
		Spec: v1.PodSpec{NodeName: n.name, AutomountServiceAccountToken: new(bool), Containers: []v1.Container{busybox("app",
			"mkdir -p /www; echo hello-from-pod > /www/index.html; echo early; sleep 3; echo late; exec httpd -f -p 127.0.0.1:8080 -h /www")}},
	}
	if _, err := pods.Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, srv.Client, "default", "web", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	t.Run("exec", func(t *testing.T) {
		for _, env := range [][]string{nil, {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false"}} { // v5 WebSocket, then SPDY
			out, errOut, code := kubectlRun(t, srv, "", env, "exec", "web", "--", "cat", "/www/index.html")
			if code != 0 || out != "hello-from-pod\n" {
				t.Errorf("exec cat (%v) = %q, %q, exit %d", env, out, errOut, code)
			}
			out, errOut, code = kubectlRun(t, srv, "", env, "exec", "web", "--", "sh", "-c", "echo to-stderr >&2; exit 3")
			if code != 3 || !strings.Contains(errOut, "to-stderr") || !strings.Contains(errOut, "command terminated with exit code 3") || out != "" {
				t.Errorf("exec exit 3 (%v) = %q, %q, exit %d", env, out, errOut, code)
			}
			out, errOut, code = kubectlRun(t, srv, "abc\n", env, "exec", "-i", "web", "--", "sh", "-c", "cat > /tmp/in; wc -c < /tmp/in")
			if code != 0 || strings.TrimSpace(out) != "4" {
				t.Errorf("exec -i (%v) = %q, %q, exit %d", env, out, errOut, code)
			}
		}
		if _, errOut, code := kubectlRun(t, srv, "", nil, "exec", "web", "-c", "nope", "--", "true"); code == 0 || !strings.Contains(errOut, "container nope is not valid for pod web") {
			t.Errorf("exec into a missing container: exit %d, %q", code, errOut)
		}
	})

	t.Run("exec-tty", func(t *testing.T) {
		// script(1) gives kubectl a terminal; the container's side is a pty too, sized as
		// kubectl's (resize events) terminal.
		cmd := exec.Command("script", "-qec", "stty cols 91 rows 17; kubectl --kubeconfig "+srv.KubeconfigPath+" exec -it web -- sh -c "+
			// kubectl sends its size right after the streams open, maybe after the shell started.
			`'tty; for i in 1 2 3 4 5 6 7 8 9 10; do s=$(stty size 2>/dev/null); [ "$s" = "17 91" ] && break; sleep 0.3; done; echo "size=$s"'`, "/dev/null")
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl exec -it: %v: %s", err, out)
		}
		if !regexp.MustCompile(`/dev/pts/\d+`).Match(out) || !strings.Contains(string(out), "size=17 91") {
			t.Errorf("kubectl exec -it: no pty of kubectl's size in the container:\n%s", out)
		}
	})

	t.Run("cp", func(t *testing.T) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.txt")
		data := strings.Repeat("wasmkube cp\n", 5000)
		if err := os.WriteFile(in, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := kubectlRun(t, srv, "", nil, "cp", in, "web:/tmp/copied.txt"); code != 0 {
			t.Fatalf("kubectl cp in: %s", errOut)
		}
		back := filepath.Join(dir, "back.txt")
		if _, errOut, code := kubectlRun(t, srv, "", nil, "cp", "web:/tmp/copied.txt", back); code != 0 {
			t.Fatalf("kubectl cp out: %s", errOut)
		}
		if got, _ := os.ReadFile(back); string(got) != data {
			t.Errorf("kubectl cp round trip: %d bytes back, want %d", len(got), len(data))
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		// httpd starts 3 s after the container: wait until it answers inside the pod.
		waitPodLog(t, srv, "web", "late")
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, _, code := kubectlRun(t, srv, "", nil, "exec", "web", "--", "wget", "-q", "-O-", "http://127.0.0.1:8080/index.html")
			if code == 0 && out == "hello-from-pod\n" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("httpd in pod web does not answer: %q, exit %d", out, code)
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, env := range [][]string{nil, {"KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}} { // the WebSocket tunnel, then SPDY
			body := portForwardGet(t, srv, env, "web", 8080, "/index.html")
			if body != "hello-from-pod\n" {
				t.Errorf("port-forward (%v): GET = %q", env, body)
			}
		}
	})

	t.Run("run-attach", func(t *testing.T) {
		overrides := `{"spec":{"nodeName":"` + n.name + `","automountServiceAccountToken":false}}`
		out, errOut, code := kubectlRun(t, srv, "hello\n", nil, "run", "once", "-i", "--rm", "--restart=Never",
			"--image=wasmkube.local/busybox:latest", "--overrides="+overrides, "--", "sh", "-c", "read x; echo got-$x")
		if code != 0 || !strings.Contains(out, "got-hello") {
			t.Errorf("kubectl run -i --rm = %q, %q, exit %d", out, errOut, code)
		}
		waitGone(t, srv, "once")
	})

	t.Run("logs", func(t *testing.T) {
		waitPodLog(t, srv, "web", "late")
		out := kubectl(t, srv, "logs", "web", "--timestamps")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 {
			t.Fatalf("logs --timestamps = %q, want 2 lines", out)
		}
		var late time.Time
		for i, want := range []string{"early", "late"} {
			ts, text, _ := strings.Cut(lines[i], " ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil || text != want {
				t.Fatalf("logs --timestamps line %d = %q (%v)", i, lines[i], err)
			}
			late = at
		}
		// --since-time is sent with second precision: the line 3 s earlier stays out.
		if got := kubectl(t, srv, "logs", "web", "--since-time="+late.Truncate(time.Second).Format(time.RFC3339)); got != "late\n" {
			t.Errorf("logs --since-time = %q, want only the late line", got)
		}
		if got := kubectl(t, srv, "logs", "web", "--since=1h"); got != "early\nlate\n" {
			t.Errorf("logs --since=1h = %q", got)
		}
		if got := kubectl(t, srv, "logs", "web", "--tail=1"); got != "late\n" {
			t.Errorf("logs --tail=1 = %q", got)
		}
		if got := kubectl(t, srv, "logs", "web", "--limit-bytes=3"); got != "ear" {
			t.Errorf("logs --limit-bytes=3 = %q", got)
		}
	})

	t.Run("cgroup-mount", func(t *testing.T) {
		out, errOut, code := kubectlRun(t, srv, "", nil, "exec", "web", "--", "sh", "-c",
			"grep ' /sys/fs/cgroup' /proc/mounts; cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max 2>/dev/null; "+
				"for d in /sys/fs/cgroup/pids /sys/fs/cgroup; do [ -e $d/pids.max ] && mkdir $d/x 2>/dev/null && echo WRITABLE; done; true")
		// The container's own cgroup is there to read (pids.max, on v1 or v2) and not to write.
		if code != 0 || !strings.Contains(out, "/sys/fs/cgroup") || strings.Contains(out, "WRITABLE") ||
			!regexp.MustCompile(`cgroup2? /sys/fs/cgroup\S* cgroup2? ro[,\s]`).MatchString(out) || !regexp.MustCompile(`(?m)^(max|\d+)$`).MatchString(out) {
			t.Errorf("/sys/fs/cgroup in the container: %q %q exit %d", out, errOut, code)
		}
	})

	t.Run("kubelet-restart", func(t *testing.T) {
		// Output written while no kubelet runs waits in the fifos (the shim holds them open)
		// and reaches the log once the next kubelet attaches again: no line is lost.
		ticker := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "ticker", Namespace: "default"},
			Spec: v1.PodSpec{NodeName: n.name, AutomountServiceAccountToken: new(bool), TerminationGracePeriodSeconds: int64p(1),
				Containers: []v1.Container{busybox("app", "i=0; while true; do echo tick-$i; i=$((i+1)); sleep 0.1; done")}},
		}
		if _, err := pods.Create(ctx, ticker, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPodLog(t, srv, "ticker", "tick-3")
		n.stop()
		time.Sleep(time.Second) // ticks pile up in the pipe meanwhile
		startKubelet(t, srv, n, true)
		last := func(out string) int {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for i, l := range lines {
				if l != "tick-"+strconv.Itoa(i) {
					t.Fatalf("log line %d = %q, want tick-%d (a line lost or doubled across the restart)", i, l, i)
				}
			}
			return len(lines) - 1
		}
		before := -1
		deadline := time.Now().Add(90 * time.Second)
		for {
			out, _, code := kubectlRun(t, srv, "", nil, "logs", "ticker")
			if code == 0 {
				if got := last(out); before < 0 {
					before = got
				} else if got > before+20 { // the new kubelet has been writing for a while
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("no new ticks in the log after the kubelet restart")
			}
			time.Sleep(500 * time.Millisecond)
		}
		if out, errOut, code := kubectlRun(t, srv, "", nil, "exec", "web", "--", "cat", "/www/index.html"); code != 0 || out != "hello-from-pod\n" {
			t.Errorf("exec after the kubelet restart = %q, %q, exit %d", out, errOut, code)
		}
	})

	t.Run("authorization", func(t *testing.T) {
		// A node credential may not exec (nor attach, nor port-forward) into pods.
		nodeClient := kubernetes.NewForConfigOrDie(srv.NodeConfig(t, n.name))
		for _, sub := range []string{"exec", "attach", "portforward"} {
			_, err := nodeClient.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("web").
				SubResource(sub).Param("command", "true").Param("stdout", "true").Param("ports", "8080").DoRaw(ctx)
			if !apierrors.IsForbidden(err) {
				t.Errorf("node credential on pods/%s: %v, want Forbidden", sub, err)
			}
		}
	})
}

// portForwardGet runs kubectl port-forward to pod's port on a free local port and GETs path.
func portForwardGet(t *testing.T, srv *apiservertest.Server, env []string, pod string, port int, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", srv.KubeconfigPath, "port-forward", "pod/"+pod, "--address=127.0.0.1", ":"+strconv.Itoa(port))
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) ->`)
	local := ""
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			local = m[1]
			break
		}
	}
	if local == "" {
		t.Fatalf("kubectl port-forward printed no local port: %s", stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://127.0.0.1:" + local + path)
	if err != nil {
		t.Fatalf("GET through port-forward: %v (%s)", err, stderr.String())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func waitPodLog(t *testing.T, srv *apiservertest.Server, pod, text string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if out, _, code := kubectlRun(t, srv, "", nil, "logs", pod); code == 0 && strings.Contains(out, text) {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("pod %s never logged %q", pod, text)
}

// BenchmarkKubectlExec measures `kubectl exec POD -- true` end to end (kubectl's own start,
// TLS to the API server, the WebSocket v5 upgrade passed through to the kubelet, a
// containerd exec, the exit Status back): p50 and p99 per round trip, for each OCI runtime
// installed (runc, crun: one node each on one containerd, their execs alternated so that
// both meet the same load), then the same round trip from client-go's WebSocket executor
// without kubectl's start. WASMKUBE_BENCH_OCI_RUNTIMES=runc (or crun) measures one.
//
//	go test -run '^$' -bench KubectlExec -benchtime 40x ./kubelet/
//
// With WASMKUBE_TEST_LOG=debug the API server, the kubelets and the benchmark log every
// stage of every exec with microsecond times (scripts/exec-timeline.py joins them into the
// table of docs/benchmarks.md).
func BenchmarkKubectlExec(b *testing.B) {
	stages := &execStages{}
	logger := slog.New(stages.handler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(), ReplaceAttr: microTime})))
	srv := apiservertest.Start(b, apiservertest.WithLogger(logger))
	daemon := nodetest.Containerd(b)
	ctx := context.Background()
	runtimes := []string{}
	for _, rt := range strings.Split(envOr("WASMKUBE_BENCH_OCI_RUNTIMES", "runc,crun"), ",") {
		if _, err := exec.LookPath(rt); err == nil {
			runtimes = append(runtimes, rt)
		}
	}
	if len(runtimes) == 0 {
		b.Fatal("no OCI runtime of WASMKUBE_BENCH_OCI_RUNTIMES is installed")
	}
	for _, rt := range runtimes {
		n := &node{name: "node-exec-" + rt, root: b.TempDir(), daemon: daemon,
			options: func(o *kubelet.Options) { o.OCIRuntime, o.Logger = rt, logger }}
		n.net = nodetest.Network(b, filepath.Join(n.root, "cni"))
		startKubeletB(b, srv, n)
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "target-" + rt, Namespace: "default"},
			Spec: v1.PodSpec{NodeName: n.name, AutomountServiceAccountToken: new(bool),
				Containers: []v1.Container{busybox("app", "exec sleep 3600")}},
		}
		if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for _, rt := range runtimes {
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			p, err := srv.Client.CoreV1().Pods("default").Get(ctx, "target-"+rt, metav1.GetOptions{})
			if err == nil && p.Status.Phase == v1.PodRunning {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("pod target-%s never running", rt)
			}
		}
	}
	type benchExec struct {
		pod   string
		start time.Time
		took  time.Duration
	}
	var execs []benchExec
	run := func(pod string) time.Duration {
		start := time.Now()
		out, err := exec.Command("kubectl", "--kubeconfig", srv.KubeconfigPath, "exec", pod, "--", "true").CombinedOutput()
		if err != nil {
			b.Fatalf("kubectl exec %s: %v: %s", pod, err, out)
		}
		took := time.Since(start)
		logger.Debug("bench exec", "pod", pod, "start", start.UnixMicro(), "took", took)
		execs = append(execs, benchExec{pod, start, took})
		return took
	}
	lib := func(pod string) time.Duration {
		u := srv.Client.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name(pod).SubResource("exec").
			VersionedParams(&v1.PodExecOptions{Command: []string{"true"}, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
		start := time.Now()
		ex, err := remotecommand.NewWebSocketExecutor(srv.Config, "GET", u.String())
		if err != nil {
			b.Fatal(err)
		}
		if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
			b.Fatalf("exec %s: %v", pod, err)
		}
		return time.Since(start)
	}
	for _, rt := range runtimes {
		run("target-" + rt) // kubectl's discovery cache filled
	}
	execs = nil
	all := map[string][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, rt := range runtimes {
			all[rt] = append(all[rt], run("target-"+rt))
		}
	}
	b.StopTimer()
	time.Sleep(200 * time.Millisecond)     // the last sessions' lines logged
	rows := map[string][][]time.Duration{} // per runtime, per exec: its stages (streaming_stages_test.go)
	for _, x := range execs {
		rt := strings.TrimPrefix(x.pod, "target-")
		if st, ok := stages.split(x.pod, "node-exec-"+rt, x.start, x.took); ok {
			rows[rt] = append(rows[rt], st)
		}
	}
	libs := map[string][]time.Duration{}
	for i := 0; i < max(b.N, 10); i++ {
		for _, rt := range runtimes {
			libs[rt] = append(libs[rt], lib("target-"+rt))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, rt := range runtimes {
		d := all[rt]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		l := libs[rt]
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		b.ReportMetric(ms(d[len(d)/2]), rt+"-p50-ms")
		b.ReportMetric(ms(d[len(d)*99/100]), rt+"-p99-ms")
		b.ReportMetric(ms(l[len(l)/2]), rt+"-client-go-p50-ms")
		if m := medians(rows[rt]); m != nil {
			// On stdout, not b.Logf: a benchmark's log is cut after a few lines.
			fmt.Printf("exec stages, %s: medians over %d execs (kubectl p50 %.1f ms)\n", rt, len(rows[rt]), ms(d[len(d)/2]))
			for i, name := range stageNames {
				fmt.Printf("  %-16s %7.1f ms\n", name, ms(m[i]))
			}
		}
	}
	start := time.Now()
	_ = exec.Command("kubectl", "version", "--client").Run()
	b.ReportMetric(ms(time.Since(start)), "kubectl-start-ms")
}

// microTime logs times with microseconds, for joining the components' lines of one exec.
func microTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Int64("time", a.Value.Time().UnixMicro())
	}
	return a
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
