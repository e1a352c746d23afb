package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

const authCacheTTL = 10 * time.Second

func (k *Kubelet) listen() (net.Listener, error) {
	cert, err := k.servingCert()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", k.opts.ServerAddr)
	if err != nil {
		return nil, fmt.Errorf("kubelet server: listen on %s: %w", k.opts.ServerAddr, err)
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), nil
}

// servingCert loads RootDir/pki/kubelet.{crt,key}, generating a self-signed pair for the
// node's IP and names on first start.
func (k *Kubelet) servingCert() (tls.Certificate, error) {
	dir := filepath.Join(k.opts.RootDir, "pki")
	crt, key := filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	if c, err := tls.LoadX509KeyPair(crt, key); err == nil {
		return c, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	hostname, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: k.opts.NodeName + "@kubelet"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{k.opts.NodeName, hostname, "localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	if ip := net.ParseIP(k.opts.NodeIP); ip != nil && !ip.Equal(net.ParseIP("127.0.0.1")) {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return tls.Certificate{}, err
	}
	kb, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(crt, key)
}

func (k *Kubelet) serve(ctx context.Context) <-chan struct{} {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.Handle("/containerLogs/", k.authenticated(http.HandlerFunc(k.serveLogs)))
	if g, ok := k.opts.Registerer.(prometheus.Gatherer); ok {
		mux.Handle("/metrics", k.authenticated(promhttp.HandlerFor(g, promhttp.HandlerOpts{})))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(k.listener); err != nil && !errors.Is(err, http.ErrServerClosed) && ctx.Err() == nil {
			k.log.Error("kubelet server", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		srv.Close()
	}()
	return done
}

type authEntry struct {
	ok      bool
	expires time.Time
}

// authenticated admits requests whose bearer token a TokenReview says belongs to
// system:masters (the API server's proxy, cluster admins). Results are cached for 10 s.
func (k *Kubelet) authenticated(next http.Handler) http.Handler {
	cache := map[[32]byte]authEntry{}
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		key := sha256.Sum256([]byte(tok))
		mu.Lock()
		e, hit := cache[key]
		mu.Unlock()
		if !hit || time.Now().After(e.expires) {
			tr, err := k.client.AuthenticationV1().TokenReviews().Create(r.Context(), &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: tok}}, metav1.CreateOptions{})
			if err != nil {
				http.Error(w, "token review failed: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			allowed := false
			if tr.Status.Authenticated {
				for _, g := range tr.Status.User.Groups {
					if g == "system:masters" {
						allowed = true
					}
				}
			}
			e = authEntry{ok: allowed, expires: time.Now().Add(authCacheTTL)}
			if !tr.Status.Authenticated {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			mu.Lock()
			for k, old := range cache { // keep the cache to live entries
				if time.Now().After(old.expires) {
					delete(cache, k)
				}
			}
			cache[key] = e
			mu.Unlock()
		}
		if !e.ok {
			http.Error(w, "Forbidden: only system:masters may read container logs from the kubelet", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LogOptions are the query parameters of /containerLogs.
type LogOptions struct {
	Follow, Previous, Timestamps bool
	TailLines, LimitBytes        int64 // -1: unset
	SinceSeconds                 int64
}

// ParseLogOptions reads and checks the query of a /containerLogs request.
func ParseLogOptions(q map[string][]string) (LogOptions, error) {
	o := LogOptions{TailLines: -1, LimitBytes: -1}
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var err error
	parseBool := func(name string, dst *bool) {
		if v := get(name); v != "" && err == nil {
			*dst, err = strconv.ParseBool(v)
			if err != nil {
				err = fmt.Errorf("query parameter %s: %q is not a boolean", name, v)
			}
		}
	}
	parseInt := func(name string, dst *int64) {
		if v := get(name); v != "" && err == nil {
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil || n < 0 {
				err = fmt.Errorf("query parameter %s: %q is not a non-negative integer", name, v)
			}
			*dst = n
		}
	}
	parseBool("follow", &o.Follow)
	parseBool("previous", &o.Previous)
	parseBool("timestamps", &o.Timestamps)
	parseInt("tailLines", &o.TailLines)
	parseInt("limitBytes", &o.LimitBytes)
	parseInt("sinceSeconds", &o.SinceSeconds)
	return o, err
}

// TailOffset returns the offset in data where its last n lines start.
func TailOffset(data []byte, n int64) int {
	if n < 0 {
		return 0
	}
	if n == 0 {
		return len(data)
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			n--
			if n == 0 {
				return i + 1
			}
		}
	}
	return 0
}

func (k *Kubelet) serveLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.Error(w, "path must be /containerLogs/<namespace>/<pod>/<container>", http.StatusBadRequest)
		return
	}
	ns, name, container := parts[0], parts[1], parts[2]
	opts, err := ParseLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod := k.podByName(ns, name)
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s is not on node %s", ns, name, k.opts.NodeName), http.StatusNotFound)
		return
	}
	cs, err := k.rt.ListContainers(r.Context(), string(pod.UID))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var mine []runtime.ContainerStatus
	for _, c := range cs {
		if c.Name == container {
			mine = append(mine, c)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].Attempt > mine[j].Attempt })
	idx := 0
	if opts.Previous {
		idx = 1
	}
	if len(mine) <= idx {
		http.Error(w, MissingLogMessage(pod, container, opts.Previous), http.StatusBadRequest)
		return
	}
	c := mine[idx]
	f, err := os.Open(c.LogPath)
	if err != nil {
		http.Error(w, fmt.Sprintf("log of container %s: %v", container, err), http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	data, _ := io.ReadAll(f)
	out := data[TailOffset(data, opts.TailLines):]
	written := int64(0)
	write := func(b []byte) bool {
		if opts.LimitBytes >= 0 && written+int64(len(b)) > opts.LimitBytes {
			b = b[:opts.LimitBytes-written]
		}
		n, err := w.Write(b)
		written += int64(n)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		return err == nil && (opts.LimitBytes < 0 || written < opts.LimitBytes)
	}
	if len(out) > 0 && !write(out) {
		return
	}
	if !opts.Follow || opts.Previous {
		return
	}
	// Follow: stream what the shim appends until the container stops and the file is drained.
	buf := make([]byte, 32<<10)
	rd := bufio.NewReader(f)
	lastCheck := time.Now()
	for {
		n, err := rd.Read(buf)
		if n > 0 {
			if !write(bytes.Clone(buf[:n])) {
				return
			}
			continue
		}
		if err != nil && err != io.EOF {
			return
		}
		if time.Since(lastCheck) > 500*time.Millisecond {
			lastCheck = time.Now()
			st, err := k.rt.ContainerStatus(r.Context(), c.ID)
			if err != nil || st.State != runtime.ContainerRunning {
				// One last drain, then done.
				rest, _ := io.ReadAll(rd)
				if len(rest) > 0 {
					write(rest)
				}
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// MissingLogMessage says why container of pod has no log to serve, in upstream's words: a
// container that never ran is "waiting to start" with its waiting reason (ContainerCreating,
// ErrImagePull, PodInitializing, ...); one that has not restarted has no previous log; a
// name the pod does not have is not valid for it.
func MissingLogMessage(pod *v1.Pod, container string, previous bool) string {
	if !hasContainer(pod, container) {
		return fmt.Sprintf("container %q is not valid for pod %q", container, pod.Name)
	}
	if previous {
		return fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod.Name)
	}
	reason := "ContainerCreating"
	for _, list := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.Name == container && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
				reason = cs.State.Waiting.Reason
			}
		}
	}
	return fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, pod.Name, reason)
}

func hasContainer(pod *v1.Pod, container string) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == container {
				return true
			}
		}
	}
	return false
}
