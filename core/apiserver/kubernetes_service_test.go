package apiserver_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A server listening on loopback says at start that pods cannot reach it through the
// kubernetes Service (its endpoint is 127.0.0.1, a pod's own address).
func TestLoopbackKubernetesEndpointWarns(t *testing.T) {
	var buf syncBuf
	srv := apiservertest.Start(t, apiservertest.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	defer srv.Stop()
	out := buf.String()
	if !strings.Contains(out, "pods cannot reach the API server") || !strings.Contains(out, "endpoint=127.0.0.1:") {
		t.Fatalf("no loopback endpoint warning in the server's log:\n%s", out)
	}
}
