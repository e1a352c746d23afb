//go:build !wasip1

package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args, err string
		interval  time.Duration
	}{
		{`{"port": 8080, "drainPath": "/drain", "inflightPath": "/inflight", "intervalMs": 500}`, "", 500 * time.Millisecond},
		{`{"port": 8080, "drainPath": "/drain?now=1", "inflightPath": "/inflight", "intervalMs": 50}`, "", 50 * time.Millisecond},
		{`{"port": 8080, "drainPath": "/drain", "inflightPath": "/inflight"}`, "", 500 * time.Millisecond},
		{``, "args are required", 0},
		{`{"port": 0, "drainPath": "/drain", "inflightPath": "/inflight"}`, "args.port", 0},
		{`{"port": 8080, "inflightPath": "/inflight"}`, "args.drainPath", 0},
		{`{"port": 8080, "drainPath": "/drain", "inflightPath": "//other/inflight"}`, "args.inflightPath", 0},
		{`{"port": 8080, "drainPath": "/drain", "inflightPath": "/inflight", "intervalMs": 0}`, "args.intervalMs", 0},
		{`{"port": 8080, "drainPath": "/drain", "inflightPath": "/inflight", "interval": 5}`, `unknown field "interval"`, 0},
	}
	for _, tt := range tests {
		c, err := Parse([]byte(tt.args))
		if tt.err == "" && (err != nil || c.Interval != tt.interval) || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Parse(%s) = %+v, %v; want interval %v or an error containing %q", tt.args, c, err, tt.interval, tt.err)
		}
	}
}

// fakePod answers GETs from a script of in-flight counts and records them.
type fakePod struct {
	drain    int
	inflight []string // bodies of successive GET /inflight; the last one repeats
	err      error    // the error of every GET, when set
	got      []string
}

func (f *fakePod) get(path string) (int, []byte, error) {
	f.got = append(f.got, path)
	if f.err != nil {
		return 0, nil, f.err
	}
	if path == "/drain" {
		return f.drain, nil, nil
	}
	b := f.inflight[0]
	if len(f.inflight) > 1 {
		f.inflight = f.inflight[1:]
	}
	return 200, []byte(b), nil
}

func TestDrain(t *testing.T) {
	cfg, err := Parse([]byte(`{"port": 8080, "drainPath": "/drain", "inflightPath": "/inflight", "intervalMs": 100}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		pod    fakePod
		budget int // sleeps before the time limit
		code   sdk.Code
		reason string
		gets   int
	}{
		{"already idle", fakePod{drain: 200, inflight: []string{"0\n"}}, 10, sdk.CodeSuccess, "", 2},
		{"drains", fakePod{drain: 204, inflight: []string{"3", "2", "2", " 1 ", "0"}}, 10, sdk.CodeSuccess, "", 6},
		{"grace period runs out", fakePod{drain: 200, inflight: []string{"5", "4"}}, 3, sdk.CodeError, "drain: 4 request(s) still in flight when the grace period ran out", 5},
		{"no drain endpoint", fakePod{drain: 404, inflight: []string{"0"}}, 10, sdk.CodeError, "drain: GET /drain: HTTP 404", 1},
		{"pod down", fakePod{err: fmt.Errorf("GET :8080/drain: %w", sdk.ECONNREFUSED)}, 10, sdk.CodeError, "drain: GET :8080/drain: connection refused", 1},
		{"not a count", fakePod{drain: 200, inflight: []string{"lots"}}, 10, sdk.CodeError, `drain: GET /inflight: the body "lots" is not a count of requests`, 2},
		{"negative", fakePod{drain: 200, inflight: []string{"-1"}}, 10, sdk.CodeError, `drain: GET /inflight: the body "-1" is not a count of requests`, 2},
	}
	for _, tt := range tests {
		sleeps, budget := 0, tt.budget
		sleep := func(d time.Duration) bool {
			if d != 100*time.Millisecond {
				t.Errorf("%s: slept %v, want the interval", tt.name, d)
			}
			sleeps++
			budget--
			return budget >= 0
		}
		var logs []string
		logf := func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
		pod := tt.pod
		got := Drain(cfg, pod.get, sleep, logf)
		if got.Code != tt.code || got.Reason != tt.reason || len(pod.got) != tt.gets || pod.got[0] != "/drain" {
			t.Errorf("%s: %+v after GETs %v, want %d %q after %d GETs starting with /drain", tt.name, got, pod.got, tt.code, tt.reason, tt.gets)
		}
		if len(logs) > len(pod.got) {
			t.Errorf("%s: %d log lines for %d GETs: %q", tt.name, len(logs), len(pod.got), logs)
		}
	}
}

// app is a pod whose in-flight count starts at inflight and, once /drain was asked for,
// drops by one per poll, or stays when stuck.
type app struct {
	mu       sync.Mutex
	inflight int
	stuck    bool
	drained  bool
	gets     []string
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gets = append(a.gets, r.URL.Path)
	switch r.URL.Path {
	case "/drain":
		a.drained = true
		_, _ = w.Write([]byte("draining\n"))
	case "/inflight":
		_, _ = w.Write([]byte(strconv.Itoa(a.inflight) + "\n"))
		if a.drained && !a.stuck && a.inflight > 0 {
			a.inflight--
		}
	default:
		http.NotFound(w, r)
	}
}

// The built module, run by the kubelet's host: it waits for the pod to drain, and when the
// pod does not, it gives up at the call's time limit (the rest of the grace period).
func TestModuleThroughTheHost(t *testing.T) {
	path := wasmbuild.Go(t, "wasm-examples/go/drain-prestop")
	if _, err := nodewasmtest.LoadSpec(t, config.HookPlugin{Spec: modulespec.Spec{Path: path}, Args: []byte(`{"port": 8080, "drainPath": "drain", "inflightPath": "/inflight"}`)}); err == nil || !strings.Contains(err.Error(), "args.drainPath") {
		t.Errorf("a bad drainPath: %v, want the init's rejection naming args.drainPath", err)
	}
	a := &app{inflight: 3}
	srv := httptest.NewServer(a)
	defer srv.Close()
	port := nodewasmtest.Port(t, srv)
	p := nodewasmtest.Load(t, path, fmt.Sprintf(`{"port": %d, "drainPath": "/drain", "inflightPath": "/inflight", "intervalMs": 20}`, port))

	if got := p.PreStop(t, 5*time.Second); got.Err != nil || got.Code != 0 {
		t.Errorf("draining pod: code %d reason %q (err %v), want 0", got.Code, got.Reason, got.Err)
	}
	want := []string{"/drain", "/inflight", "/inflight", "/inflight", "/inflight"}
	if a.mu.Lock(); strings.Join(a.gets, " ") != strings.Join(want, " ") {
		t.Errorf("GETs %v, want %v", a.gets, want)
	}
	a.gets, a.inflight, a.stuck = nil, 2, true
	a.mu.Unlock()

	grace := 400 * time.Millisecond
	start := time.Now()
	got := p.PreStop(t, grace)
	took := time.Since(start)
	// sleep_ms returns a moment before the limit, so the plugin usually reports its own
	// reason; on a loaded machine it may not return within that moment, and the call is a
	// time-limit failure. Either way the hook ends on time, having said why.
	var ce *wasmhost.CallError
	if !errors.As(got.Err, &ce) || ce.Reason != wasmhost.ReasonError && ce.Reason != wasmhost.ReasonTimeout ||
		got.Reason != "drain: 2 request(s) still in flight when the grace period ran out" {
		t.Errorf("stuck pod: code %d reason %q (err %v), want the plugin's error or a time-limit failure, with its reason", got.Code, got.Reason, got.Err)
	}
	// The plugin waits for the whole grace period and stops there; the slack above it is
	// the host's (it took 0.5 s more under -race on a loaded machine).
	if took < grace-50*time.Millisecond || took > grace+2*time.Second {
		t.Errorf("stuck pod: the hook took %v, want the grace period %v", took, grace)
	}

	srv.Close()
	if got := p.PreStop(t, time.Second); got.Code != 1 || got.Reason != fmt.Sprintf("drain: GET :%d/drain: connection refused", port) {
		t.Errorf("pod down: code %d reason %q (err %v)", got.Code, got.Reason, got.Err)
	}
}
