package nodewasm_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
)

// serve starts an HTTP server on ip (a loopback address) and returns its port.
func serve(t *testing.T, ip string, h http.Handler) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPluginReachesOnlyItsPodIP: with the pod at 127.0.0.2, a plugin that tries every way
// docs/abi.md section 4.7 closes (another host in the path, user info, absolute URLs,
// redirects to another host, the port of a server on another address, ports out of range)
// reaches the pod or gets EINVAL/ECONNREFUSED, and the server on 127.0.0.1 (where the
// node's own services listen under wasmkube up) never sees a request.
func TestPluginReachesOnlyItsPodIP(t *testing.T) {
	var secretHits atomic.Int32
	secret := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		fmt.Fprint(w, "secret")
	}))
	pod := serve(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/secret", secret), http.StatusFound)
		case "/":
			fmt.Fprint(w, "pod")
		default:
			http.NotFound(w, r)
		}
	}))
	other := fmt.Sprintf("127.0.0.1:%d", secret)
	for _, tt := range []struct {
		name, args, want string
	}{
		{"the pod", fmt.Sprintf("%d /", pod), "200"},
		{"a redirect to another host is returned, not followed", fmt.Sprintf("%d /redirect", pod), "302 http://" + other + "/secret"},
		{"another host after //", fmt.Sprintf("%d //%s/secret", pod, other), "-22"},
		{"user info trick", fmt.Sprintf("%d /@%s/secret", pod, other), "-22"},
		{"user info inside the path", fmt.Sprintf("%d /x@%s", pod, other), "-22"},
		{"absolute URL", fmt.Sprintf("%d http://%s/secret", pod, other), "-22"},
		{"scheme inside the path", fmt.Sprintf("%d /http://%s/secret", pod, other), "-22"},
		{"fragment", fmt.Sprintf("%d /#x", pod), "-22"},
		{"backslash", fmt.Sprintf(`%d /\\%s`, pod, other), "-22"},
		{"encoded slashes stay on the pod", fmt.Sprintf("%d /%%2F%%2F%s", pod, other), "404"},
		{"query may hold anything printable", fmt.Sprintf("%d /?next=http://%s@x", pod, other), "200"},
		{"the other server's port is looked up on the pod IP", fmt.Sprintf("%d /secret", secret), "-111"},
		{"port 0", "0 /", "-22"},
		{"port above 65535", "65536 /", "-22"},
		{"tcp to the pod", fmt.Sprint(pod), "0"},
		{"tcp to the other server's port", fmt.Sprint(secret), "-111"},
		{"tcp port out of range", "70000", "-22"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := nodewasmtest.Load(t, wat(t, "req.wat"), fmt.Sprintf("%q", tt.args))
			c := &nodewasm.Call{Kind: nodewasm.Probe, Pod: p.Pod, Container: "app", ProbeKind: nodewasm.ProbeReadiness, PodIP: "127.0.0.2", Timeout: 2 * time.Second}
			if err := c.Do(context.Background(), p.Plugin.Pool(nodewasm.Probe)); err != nil {
				t.Fatal(err)
			}
			if c.Reason != tt.want {
				t.Fatalf("result %q, want %q", c.Reason, tt.want)
			}
		})
	}
	if n := secretHits.Load(); n != 0 {
		t.Fatalf("the server on 127.0.0.1 got %d requests", n)
	}
}

// TestNetworkWithoutPodIP: a pod without an IP yet gets EACCES; POST is for preStop only.
func TestNetworkWithoutPodIPAndPostOutsidePreStop(t *testing.T) {
	var posted atomic.Value
	port := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var b strings.Builder
			buf := make([]byte, 64)
			n, _ := r.Body.Read(buf)
			b.Write(buf[:n])
			posted.Store(r.Header.Get("Content-Type") + " " + b.String())
		}
	}))
	p := nodewasmtest.Load(t, wat(t, "req.wat"), fmt.Sprintf(`"%d /drain"`, port))
	c := &nodewasm.Call{Kind: nodewasm.Probe, Pod: p.Pod, Container: "app", ProbeKind: nodewasm.ProbeLiveness, Timeout: time.Second}
	if err := c.Do(context.Background(), p.Plugin.Pool(nodewasm.Probe)); err != nil || c.Reason != "-13" {
		t.Fatalf("no pod IP: %q %v, want -13 (EACCES)", c.Reason, err)
	}
	if r := p.PreStop(t, time.Second); r.Err != nil || r.Reason != "200" {
		t.Fatalf("preStop POST: %+v", r)
	}
	if got := posted.Load(); got != "application/octet-stream drain" {
		t.Fatalf("server got %q", got)
	}
}
