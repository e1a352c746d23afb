package kubelet

import (
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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/internal/profiling"
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
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	// The API server proxies exec, attach and port-forward with a client certificate from the
	// cluster CA (SPDY upgrades carry no bearer token), as upstream's kubelet-client
	// certificate; bearer tokens still work for everything.
	if pool := k.clientCAs(); pool != nil {
		tc.ClientCAs, tc.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return tls.NewListener(ln, tc), nil
}

// clientCAs is the cluster CA of the node's credential, which signs the API server's
// client certificate; nil when the credential names none.
func (k *Kubelet) clientCAs() *x509.CertPool {
	data := k.opts.RESTConfig.CAData
	if len(data) == 0 && k.opts.RESTConfig.CAFile != "" {
		data, _ = os.ReadFile(k.opts.RESTConfig.CAFile)
	}
	pool := x509.NewCertPool()
	if len(data) == 0 || !pool.AppendCertsFromPEM(data) {
		return nil
	}
	return pool
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
	mux.Handle("/exec/", k.authenticated(http.HandlerFunc(k.serveExec)))
	mux.Handle("/attach/", k.authenticated(http.HandlerFunc(k.serveAttach)))
	mux.Handle("/portForward/", k.authenticated(http.HandlerFunc(k.servePortForward)))
	mux.Handle("/stats/summary", k.authenticated(http.HandlerFunc(k.serveStatsSummary)))
	mux.Handle(explorerRecordsPath, k.authenticated(http.HandlerFunc(k.serveExplorerRecords)))
	if g, ok := k.opts.Registerer.(prometheus.Gatherer); ok {
		mux.Handle("/metrics", k.authenticated(promhttp.HandlerFor(g, promhttp.HandlerOpts{})))
	}
	if !k.opts.DisableProfiling {
		mux.Handle(profiling.Prefix, k.profiling())
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
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			if slices.Contains(r.TLS.PeerCertificates[0].Subject.Organization, "system:masters") {
				next.ServeHTTP(w, r)
				return
			}
			http.Error(w, "Forbidden: only system:masters may use the kubelet's API", http.StatusForbidden)
			return
		}
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
			http.Error(w, "Forbidden: only system:masters may use the kubelet's API (logs, exec, attach, port-forward)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
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
	for _, list := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
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
	return hasEphemeralContainer(pod, container)
}

// profiling serves /debug/pprof/ as upstream's kubelet: to the API server's proxy
// (a system:masters client certificate) and to bearer tokens allowed get on
// nodes/proxy of this node (a TokenReview and a SubjectAccessReview).
func (k *Kubelet) profiling() http.Handler {
	delegated := profiling.Delegated(k.client, profiling.NodeProxy(k.opts.NodeName), profiling.Handler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && slices.Contains(r.TLS.PeerCertificates[0].Subject.Organization, "system:masters") {
			profiling.Handler().ServeHTTP(w, r)
			return
		}
		delegated.ServeHTTP(w, r)
	})
}
