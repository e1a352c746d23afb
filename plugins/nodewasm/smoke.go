package nodewasm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// SmokeBody is what the smoke endpoint answers to every request, with status 200: a body
// that a drain loop waiting for "0" in-flight requests accepts at once, and that a health
// check reads as a verdict (failure or success, either is fine for a smoke call).
const SmokeBody = "0"

// SmokePod is the synthetic pod of smoke calls: one container "app" with a readiness
// probe and a preStop hook, pod IP 127.0.0.1.
func SmokePod() *v1.Pod {
	get := &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wasmkube-smoke", Namespace: "default", UID: "wasmkube-smoke",
			Labels: map[string]string{"app": "wasmkube-smoke"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Image: "busybox",
			Ports:          []v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: get}, TimeoutSeconds: 1, PeriodSeconds: 10},
			Lifecycle:      &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: get}},
		}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1", PodIPs: []v1.PodIP{{IP: "127.0.0.1"}}},
	}
}

// smokeLimit bounds a smoke call whatever the plugin's cap.
const smokeLimit = 2 * time.Second

// Smoke calls each kubelet entry point the pool's module exports once, with SmokePod,
// against a loopback test endpoint that stands in for the pod on every port (it answers
// 200 and SmokeBody). A trap, timeout, memory or pointer fault, or garbage result is an
// error; a verdict (success, failure, or Error with a reason) passes. The kubelet runs it
// before a module replaces another, so a broken module never serves a probe.
func Smoke(ctx context.Context, pool *wasmhost.Pool) error {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(SmokeBody))
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("smoke endpoint: %w", err)
	}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	pod := SmokePod()
	limit := pool.Module().Timeout()
	if limit <= 0 || limit > smokeLimit {
		limit = smokeLimit
	}
	for _, k := range pool.Module().Kinds().Intersect(Kinds) {
		c := &Call{Kind: k, Pod: pod, Container: "app", PodIP: pod.Status.PodIP, Timeout: limit, dial: ln.Addr().String()}
		if k == Probe {
			c.ProbeKind = ProbeReadiness
		}
		if err := c.Do(ctx, pool); err != nil {
			var ce *wasmhost.CallError
			if errors.As(err, &ce) && ce.Reason == wasmhost.ReasonError {
				continue
			}
			return fmt.Errorf("smoke call of %s: %w", k.Export, err)
		}
	}
	return nil
}
