package apiserver_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver"
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

// With an advertise address the kubernetes Endpoints carry it, the server answers there
// too (at the listen port, the listen address staying loopback), and its certificate
// names it; a bad one is refused naming the field.
func TestAdvertiseAddressIsServedAndCertified(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithAdvertiseAddress("127.0.0.2"))
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Client.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 || ep.Subsets[0].Addresses[0].IP != "127.0.0.2" ||
		fmt.Sprint(ep.Subsets[0].Ports[0].Port) != u.Port() {
		t.Fatalf("kubernetes Endpoints %+v, want 127.0.0.2:%s", ep.Subsets, u.Port())
	}
	cfg := rest.CopyConfig(srv.Config)
	cfg.Host = "https://" + net.JoinHostPort("127.0.0.2", u.Port()) // verified against the cluster CA for 127.0.0.2
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("request to the advertise address: %v", err)
	}

	for _, bad := range []string{"localhost", "0.0.0.0", "fd00::1"} {
		_, err := apiserver.New(context.Background(), apiserver.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", AdvertiseAddress: bad})
		if err == nil || !strings.Contains(err.Error(), "advertise address") || !strings.Contains(err.Error(), bad) {
			t.Errorf("AdvertiseAddress %q: %v, want an error naming the advertise address", bad, err)
		}
	}
}
