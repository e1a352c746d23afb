//go:build !wasip1

package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

const goodArgs = `{"port": 8080, "path": "/health", "field": "status", "value": "ok"}`

func TestParse(t *testing.T) {
	tests := []struct {
		args, err string
	}{
		{goodArgs, ""},
		{`{"port": 8080, "path": "/health?full=1", "field": "cache", "value": {"warm": true}}`, ""},
		{``, "args are required"},
		{`{"port": 0, "path": "/health", "field": "status", "value": "ok"}`, "args.port"},
		{`{"port": 70000, "path": "/health", "field": "status", "value": "ok"}`, "args.port"},
		{`{"port": 8080, "path": "health", "field": "status", "value": "ok"}`, "args.path"},
		{`{"port": 8080, "path": "//evil/health", "field": "status", "value": "ok"}`, "args.path"},
		{`{"port": 8080, "path": "/health", "value": "ok"}`, "args.field"},
		{`{"port": 8080, "path": "/health", "field": "status"}`, "args.value"},
		{`{"port": 8080, "path": "/health", "feild": "status", "value": "ok"}`, `unknown field "feild"`},
		{`{"port": "8080"}`, "args:"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.args))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", tt.args, err, tt.err)
		}
	}
}

func TestDecide(t *testing.T) {
	status, err := Parse([]byte(goodArgs))
	if err != nil {
		t.Fatal(err)
	}
	warm, err := Parse([]byte(`{"port": 8080, "path": "/health", "field": "warm", "value": true}`))
	if err != nil {
		t.Fatal(err)
	}
	shards, err := Parse([]byte(`{"port": 8080, "path": "/health", "field": "shards", "value": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cfg    *Config
		status int
		body   string
		code   sdk.Code
		reason string
	}{
		{status, 200, `{"status": "ok", "uptime": 12}`, sdk.CodeSuccess, ""},
		{status, 204, `{"status":"ok"}`, sdk.CodeSuccess, ""},
		{status, 200, `{"status": "starting"}`, sdk.CodeFailure, `GET /health: status is "starting", want "ok"`},
		{status, 200, `{"status": {"code": "ok"}}`, sdk.CodeFailure, `GET /health: status is {"code":"ok"}, want "ok"`},
		{status, 200, `{"state": "ok"}`, sdk.CodeFailure, `GET /health: no field "status" in the body`},
		{status, 200, `{"nested": {"status": "ok"}}`, sdk.CodeFailure, `GET /health: no field "status" in the body`},
		{status, 200, `ok`, sdk.CodeFailure, "GET /health: the body is not a JSON object"},
		{status, 200, `["ok"]`, sdk.CodeFailure, "GET /health: the body is not a JSON object"},
		{status, 503, `{"status": "ok"}`, sdk.CodeFailure, "GET /health: HTTP 503"},
		{status, 302, ``, sdk.CodeFailure, "GET /health: HTTP 302"},
		{warm, 200, `{"warm": true}`, sdk.CodeSuccess, ""},
		{warm, 200, `{"warm": "true"}`, sdk.CodeFailure, `GET /health: warm is "true", want true`},
		{shards, 200, `{"shards": 3.0}`, sdk.CodeSuccess, ""},
		{shards, 200, `{"shards": 2}`, sdk.CodeFailure, `GET /health: shards is 2, want 3`},
	}
	for _, tt := range tests {
		got := tt.cfg.Decide(tt.status, []byte(tt.body))
		if got.Code != tt.code || !strings.HasPrefix(got.Reason, tt.reason) {
			t.Errorf("field %s, HTTP %d %s: %+v, want code %d reason %q", tt.cfg.Field, tt.status, tt.body, got, tt.code, tt.reason)
		}
	}
}

// The built module, run by the kubelet's host against a pod whose /health document flips.
func TestModuleThroughTheHost(t *testing.T) {
	path := wasmbuild.Go(t, "wasm-examples/go/json-health-probe")
	for _, bad := range []string{``, `{"port": 8080, "path": "/health", "field": "status"}`} {
		if _, err := nodewasmtest.LoadSpec(t, config.HookPlugin{Spec: modulespec.Spec{Path: path}, Args: []byte(bad)}); err == nil || !strings.Contains(err.Error(), "args") {
			t.Errorf("args %q: %v, want the init's rejection", bad, err)
		}
	}
	var mu sync.Mutex
	status, body := http.StatusOK, `{"status": "starting"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	serve := func(s int, b string) {
		mu.Lock()
		status, body = s, b
		mu.Unlock()
	}
	port := nodewasmtest.Port(t, srv)
	p := nodewasmtest.Load(t, path, fmt.Sprintf(`{"port": %d, "path": "/health", "field": "status", "value": "ok"}`, port))
	big := `{"status": "ok", "pad": "` + strings.Repeat("x", 20000) + `"}`
	tests := []struct {
		status int
		body   string
		code   int32
		reason string
	}{
		{200, `{"status": "starting"}`, 2, `GET /health: status is "starting", want "ok"`},
		{200, `{"status": "ok", "cache": "warm"}`, 0, ""},
		{200, big, 0, ""}, // past the SDK's first buffer: read again through the (buf, cap) rule
		{500, `{"status": "ok"}`, 2, "GET /health: HTTP 500"},
		{200, `<html>`, 2, "GET /health: the body is not a JSON object: invalid character '<' looking for beginning of value"},
	}
	for _, kind := range []string{"readiness", "liveness"} {
		for _, tt := range tests {
			serve(tt.status, tt.body)
			got := p.Probe(t, kind, time.Second)
			if got.Err != nil || got.Code != tt.code || got.Reason != tt.reason {
				t.Errorf("%s, HTTP %d %.40q: code %d reason %q (err %v), want %d %q", kind, tt.status, tt.body, got.Code, got.Reason, got.Err, tt.code, tt.reason)
			}
		}
	}
	srv.Close()
	want := fmt.Sprintf("GET :%d/health: connection refused", port)
	if got := p.Probe(t, "readiness", time.Second); got.Code != 2 || got.Reason != want {
		t.Errorf("server down: code %d reason %q (err %v), want 2 %q", got.Code, got.Reason, got.Err, want)
	}
}
