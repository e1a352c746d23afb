package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

func TestTrackerThresholds(t *testing.T) {
	for _, tc := range []struct {
		name       string
		succ, fail int32
		initial    Result
		in         []Result
		want       []Result
	}{
		{"readiness needs 2 successes", 2, 3, Failure, []Result{Success, Success, Failure}, []Result{Failure, Success, Success}},
		{"liveness needs 3 failures", 1, 3, Success, []Result{Failure, Failure, Success, Failure, Failure, Failure}, []Result{Success, Success, Success, Success, Success, Failure}},
		{"unknown is neutral", 1, 1, Failure, []Result{Unknown, Success, Unknown}, []Result{Failure, Success, Success}},
		{"defaults", 0, 0, Success, []Result{Failure, Failure, Failure}, []Result{Success, Success, Failure}},
	} {
		tr := NewTracker(&v1.Probe{SuccessThreshold: tc.succ, FailureThreshold: tc.fail}, tc.initial)
		for i, r := range tc.in {
			if got, _ := tr.Observe(r); got != tc.want[i] {
				t.Errorf("%s: step %d: got %v want %v", tc.name, i, got, tc.want[i])
			}
		}
	}
}

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	if p, err := ResolvePort(intstr.FromString("http"), c); err != nil || p != 8080 {
		t.Fatalf("named port: %d %v", p, err)
	}
	if p, err := ResolvePort(intstr.FromInt32(81), c); err != nil || p != 81 {
		t.Fatalf("number: %d %v", p, err)
	}
	if _, err := ResolvePort(intstr.FromString("nope"), c); err == nil {
		t.Fatal("unknown port name accepted")
	}
}

func TestRunnerHandlers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" && r.Header.Get("X-Probe") == "1" {
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	fake := runtime.NewFake("busybox")
	fake.Exec = func(_ runtime.ContainerStatus, cmd []string) *runtime.ExecResult {
		switch cmd[0] {
		case "true":
			return &runtime.ExecResult{}
		case "silent":
			return &runtime.ExecResult{ExitCode: 2}
		}
		return &runtime.ExecResult{ExitCode: 1, Stdout: []byte("bad")}
	}
	ctx := context.Background()
	sb, _ := fake.RunPodSandbox(ctx, runtime.SandboxConfig{Pod: runtime.PodRef{UID: "u", Name: "p"}})
	cid, _ := fake.CreateContainer(ctx, sb.ID, runtime.ContainerConfig{Name: "app", Image: "busybox"})
	_ = fake.StartContainer(ctx, cid)

	tgt := Target{Container: &v1.Container{Name: "app"}, ContainerID: cid, PodIP: "127.0.0.1"}
	r := NewRunner(fake)
	for _, tc := range []struct {
		name string
		h    v1.ProbeHandler
		want Result
		// wantMsg is the Unhealthy event's message, as upstream words it (each part once).
		wantMsg string
	}{
		{"http ok", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(port)), HTTPHeaders: []v1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}}, Success, ""},
		{"http 503", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/bad", Port: intstr.FromInt32(int32(port))}}, Failure, "HTTP probe failed with statuscode: 503"},
		{"http refused", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(closedPort))}}, Failure,
			fmt.Sprintf(`Get "http://127.0.0.1:%d/ok": dial tcp 127.0.0.1:%d: connect: connection refused`, closedPort, closedPort)},
		{"tcp open", v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}, Success, ""},
		{"tcp closed", v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(closedPort))}}, Failure,
			fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", closedPort)},
		{"exec 0", v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, Success, ""},
		{"exec 1", v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}, Failure, `command "false" exited with 1: bad`},
		{"exec 2 silent", v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"silent", "x"}}}, Failure, `command "silent x" exited with 2`},
	} {
		got, msg, err := r.Probe(ctx, tgt, &tc.h)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %v (%s) err %v, want %v", tc.name, got, msg, err, tc.want)
		}
		if tc.wantMsg != "" && msg != tc.wantMsg {
			t.Errorf("%s: message %q, want %q", tc.name, msg, tc.wantMsg)
		}
	}
}

type scripted struct {
	mu      sync.Mutex
	results []Result
	n       int
}

func (s *scripted) Probe(context.Context, Target, *v1.ProbeHandler) (Result, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.results[len(s.results)-1]
	if s.n < len(s.results) {
		r = s.results[s.n]
	}
	s.n++
	return r, "", nil
}

func TestLoopReportsStateChanges(t *testing.T) {
	pr := &scripted{results: []Result{Failure, Success, Success, Failure}}
	p := &v1.Probe{PeriodSeconds: 0, SuccessThreshold: 2, FailureThreshold: 1}
	tr := NewTracker(p, Failure)
	changes := make(chan Result, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Period is whole seconds; a one-second period keeps this test to ~3 s.
	p.PeriodSeconds = 1
	go Loop(ctx, pr, Target{}, p, time.Now(), tr, nil, func(r Result) { changes <- r })
	if got := <-changes; got != Success {
		t.Fatalf("first change %v, want success after two successes", got)
	}
	if got := <-changes; got != Failure {
		t.Fatalf("second change %v, want failure", got)
	}
}

func TestNewHTTPGetRequest(t *testing.T) {
	tgt := Target{PodIP: "10.1.2.3", Container: &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 8080}}}}
	g := &v1.HTTPGetAction{Path: "healthz?x=1", Port: intstr.FromString("web"), Scheme: v1.URISchemeHTTPS,
		HTTPHeaders: []v1.HTTPHeader{{Name: "Host", Value: "example.test"}, {Name: "X-A", Value: "b"}}}
	req, err := NewHTTPGetRequest(context.Background(), tgt, g)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.URL.String(); got != "https://10.1.2.3:8080/healthz?x=1" {
		t.Errorf("url %s", got)
	}
	if req.Host != "example.test" || req.Header.Get("X-A") != "b" || req.Header.Get("Host") != "" {
		t.Errorf("host %q, headers %v", req.Host, req.Header)
	}
	if _, err := NewHTTPGetRequest(context.Background(), tgt, &v1.HTTPGetAction{Port: intstr.FromString("nope")}); err == nil {
		t.Error("unknown named port accepted")
	}
}
