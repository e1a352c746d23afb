package hook

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

func TestRunnerHandlers(t *testing.T) {
	hits := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.URL.Path
		if r.URL.Path != "/stop" {
			w.WriteHeader(500)
		}
	}))
	defer srv.Close()
	_, ps, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(ps)

	fake := runtime.NewFake("busybox")
	var execd []string
	fake.Exec = func(_ runtime.ContainerStatus, cmd []string) *runtime.ExecResult {
		execd = append(execd, cmd...)
		if cmd[0] == "fail" {
			return &runtime.ExecResult{ExitCode: 2}
		}
		return &runtime.ExecResult{}
	}
	ctx := context.Background()
	sb, _ := fake.RunPodSandbox(ctx, runtime.SandboxConfig{Pod: runtime.PodRef{UID: "u", Name: "p"}})
	cid, _ := fake.CreateContainer(ctx, sb.ID, runtime.ContainerConfig{Name: "app", Image: "busybox"})
	_ = fake.StartContainer(ctx, cid)
	tgt := probe.Target{Container: &v1.Container{Name: "app"}, ContainerID: cid, PodIP: "127.0.0.1"}
	r := NewRunner(fake)

	for _, tc := range []struct {
		name    string
		h       v1.LifecycleHandler
		wantErr bool
	}{
		{"exec ok", v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"ok"}}}, false},
		{"exec fails", v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"fail"}}}, true},
		{"http ok", v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/stop", Port: intstr.FromInt32(int32(port))}}, false},
		{"http 500", v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/x", Port: intstr.FromInt32(int32(port))}}, true},
		{"sleep 0", v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 0}}, false},
		{"empty", v1.LifecycleHandler{}, true},
	} {
		if err := r.PreStop(ctx, tgt, &tc.h); (err != nil) != tc.wantErr {
			t.Errorf("%s: err %v, wantErr %v", tc.name, err, tc.wantErr)
		}
	}
	if len(execd) != 2 || <-hits != "/stop" || <-hits != "/x" {
		t.Fatalf("hooks not run as expected: exec %v", execd)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.PreStop(cctx, tgt, &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 30}}); err == nil {
		t.Fatal("sleep hook ignored its context")
	}
}
