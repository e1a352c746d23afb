// Package apiserver is wasmkube's Kubernetes-compatible API server: HTTPS with bearer
// tokens, discovery, a generic REST store per resource over core/storage (etcd), the
// admission chain, server-side tables and watch streams, so that kubectl and client-go
// work unchanged. See docs/apiserver.md.
package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authn"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/apiserver/serviceaccount"
	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/core/storage"
)

// DefaultListen is the address the server listens on unless told otherwise.
const DefaultListen = "127.0.0.1:6443"

// DefaultServiceCIDR is the range service cluster IPs are allocated from.
const DefaultServiceCIDR = "10.96.0.0/16"

// DefaultNodeCredentialTTL is how long a node credential is valid unless
// Options.NodeCredentialTTL says otherwise.
const DefaultNodeCredentialTTL = authn.DefaultNodeCredentialTTL

// Options configure a Server.
type Options struct {
	// DataDir holds the PKI, tokens, admin.kubeconfig, join-token and (unless
	// EtcdEndpoints is set) the embedded etcd. Required.
	DataDir string
	// Listen is host:port for HTTPS; DefaultListen when empty. Port 0 picks a free port.
	Listen string
	// AdvertiseAddress is the IPv4 address the `default/kubernetes` Endpoints carry, where
	// pods reach this server through kubernetes.default.svc (upstream's
	// --advertise-address). The server also listens there, at Listen's port, when Listen
	// does not cover it, and its certificate names it. Empty: the listen address (a
	// wildcard listen: the machine's first non-loopback address). See docs/workloads.md.
	AdvertiseAddress string
	// EtcdEndpoints of an external etcd cluster; empty runs an embedded etcd.
	EtcdEndpoints []string
	// DefaultTolerationSeconds for the not-ready/unreachable tolerations added to pods;
	// 300 when zero.
	DefaultTolerationSeconds int64
	// Admission plugins added to the built-in chain (each an
	// admission.MutationInterface, admission.ValidationInterface, both, or an
	// admission.Source): their Admit runs after the built-in mutation, their Validate
	// after the built-in validation. A plugin that is an admission.WantsObjectReader gets
	// the server's watch-cache reader.
	Admission []admission.Plugin
	// ServiceCIDR is the IPv4 range of service cluster IPs; DefaultServiceCIDR when empty.
	ServiceCIDR string
	// EventTTL is how long events live after their last write; one hour (as upstream)
	// when zero.
	EventTTL time.Duration
	// CompactionInterval of etcd history; storage's default when zero.
	CompactionInterval time.Duration
	// RestartProcess is storage.Config.RestartProcess: how the command restarts the
	// process after the embedded etcd failed a write for good (a full disk) and its disk
	// has room again. Nil: writes stay refused, asking for a restart.
	RestartProcess func(reason string)
	// EncryptionConfig is the path of an EncryptionConfiguration (upstream's
	// --encryption-provider-config). Empty: DataDir/encryption-config.yaml, created on
	// first start with a fresh AES-GCM key for secrets (docs/security.md).
	EncryptionConfig string
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// NodeCredentialTTL is how long a node credential (join, renewal) is valid;
	// DefaultNodeCredentialTTL when zero. Kubelets renew at two thirds of it.
	NodeCredentialTTL time.Duration
	// ExplorerRecords is the size of the decision explorer's ring (docs/explorer.md):
	// explorer.DefaultSize when zero; negative turns records off.
	ExplorerRecords int
	// DisableProfiling turns off /debug/pprof/ (upstream's --profiling=false). Served by
	// default, to users allowed get on the nonResourceURL (internal/profiling).
	DisableProfiling bool
	// TokenAuthFile is a CSV file of static user tokens (upstream's --token-auth-file):
	// token,user,uid,"group1,group2". Empty: none. See docs/security.md.
	TokenAuthFile string
}

// Server is a running API server. Create it with New and serve with Run.
type Server struct {
	opts    Options
	log     *slog.Logger
	backend *storage.Backend
	reg     registry.Table
	stores  map[schema.GroupVersionResource]*registry.Store
	// nodeStats caches the kubelets' stats summaries for metrics.k8s.io (metricsapi.go).
	nodeStats nodeStatsCache
	// crds are the custom resources, which change at run time (customresources.go).
	crds *customResources
	auth *authn.Authenticator
	// joinFailures and bearerFailures budget failed join secrets and bearer tokens per
	// source IP (authn/ratelimit.go).
	joinFailures   *authn.FailureLimiter
	bearerFailures *authn.FailureLimiter
	pki            *authn.PKI
	chain          *admission.Chain
	metrics        *apiMetrics
	ln             net.Listener
	advLn          net.Listener // on AdvertiseAddress when ln does not cover it; nil otherwise
	url            string

	// explorer serves the decision records, explorerRec records this server's
	// (explorer.go); both nil when records are off.
	explorer    *explorer.Handler
	explorerRec *explorer.Recorder

	metricsHandler http.Handler
	openapi        http.Handler
	kubeletClient  *http.Client
	kubeletStreams kubeletStreams // exec, attach, port-forward (streaming.go)

	namespaces *nsCache
	// reader is the watch-fed object cache (objreader.go) of wasm policies, quota and the
	// ServiceAccount admission plugin.
	reader *objectReader
	// saTokens signs and verifies service account tokens (serviceaccounts.go).
	saTokens *serviceaccount.Issuer
	// authz is the authorizer chain (authorizer.go); staticTokens the
	// users of Options.TokenAuthFile.
	authz        *authz.Authorizer
	staticTokens map[[32]byte]admission.UserInfo
	bgCancel     context.CancelFunc
	health       healthChecks

	ready    chan struct{}
	stopping chan struct{}
	done     chan struct{}
	runErr   error
	runOnce  sync.Once
}

// New prepares a server: it starts (or connects to) etcd, loads or creates the CA, the
// serving certificate and the tokens in DataDir, listens on Listen, writes
// DataDir/admin.kubeconfig and DataDir/join-token, and makes sure the default
// namespaces exist. Requests are served once Run is called.
func New(ctx context.Context, opts Options) (*Server, error) {
	opts, host, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	s := newServer(opts)
	s.backend, err = storage.NewBackend(ctx, storage.Config{
		DataDir: opts.DataDir, Endpoints: opts.EtcdEndpoints, CompactionInterval: opts.CompactionInterval, Logger: opts.Logger,
		RestartProcess: opts.RestartProcess,
	})
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			if s.bgCancel != nil {
				s.bgCancel()
			}
			s.backend.Close()
		}
	}()
	if err := s.loadIdentity(ctx, host); err != nil {
		return nil, err
	}
	pa, err := s.buildAdmission()
	if err != nil {
		return nil, err
	}
	s.initExplorer()
	if err := s.buildStores(ctx); err != nil {
		return nil, err
	}
	if err := s.seed(ctx); err != nil {
		return nil, err
	}
	if err := s.startBackground(ctx, pa); err != nil {
		return nil, err
	}
	if err := s.listen(ctx, host); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// seedNamespaces creates default, kube-system, kube-public and kube-node-lease.
func (s *Server) seedNamespaces(ctx context.Context) error {
	st := s.stores[corev1.SchemeGroupVersion.WithResource("namespaces")]
	for _, name := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		st.PrepareForCreate(ns, metav1.Now())
		defaults.Default(ns)
		_, err := st.Storage.Create(ctx, st.Key("", name), st.TrackServerWrite(registry.ServerManager, nil, ns))
		if errors.Is(err, storage.ErrAlreadyExists) {
			// A data dir from before the kubernetes.io/metadata.name label: add it.
			_, err = st.Storage.GuaranteedUpdate(ctx, st.Key("", name), nil, func(cur runtime.Object) (runtime.Object, error) {
				if cur.(*corev1.Namespace).Labels[corev1.LabelMetadataName] == name {
					return cur, nil
				}
				next := cur.DeepCopyObject().(*corev1.Namespace)
				defaults.Default(next)
				return st.TrackServerWrite(registry.ServerManager, cur, next), nil
			})
		}
		if err != nil {
			return fmt.Errorf("apiserver: create namespace %s: %w", name, err)
		}
	}
	return nil
}

func (s *Server) getNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return s.namespaces.get(ctx, name)
}

// Run serves until ctx is done, then stops accepting requests, ends open watches, waits
// briefly for requests in flight and closes storage.
func (s *Server) Run(ctx context.Context) error {
	started := false
	var runErr error
	s.runOnce.Do(func() {
		started = true
		srv := s.httpServer() // the timeouts and limits of httpguard.go
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{s.pki.Serving}, MinVersion: tls.VersionTLS12}
		srv.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
		serveErr := make(chan error, 2)
		go func() { serveErr <- srv.ServeTLS(s.ln, "", "") }()
		if s.advLn != nil {
			go func() { serveErr <- srv.ServeTLS(s.advLn, "", "") }()
		}
		close(s.ready)
		if s.advLn != nil {
			s.log.Info("serving", "url", s.url, "advertised", s.advLn.Addr().String(), "kubeconfig", s.AdminKubeconfigPath())
		} else {
			s.log.Info("serving", "url", s.url, "kubeconfig", s.AdminKubeconfigPath())
		}
		select {
		case <-ctx.Done():
		case runErr = <-serveErr:
		}
		close(s.stopping)
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
		s.bgCancel()
		s.explorerRec.Close()
		if err := s.backend.Close(); err != nil && runErr == nil {
			runErr = err
		}
		if errors.Is(runErr, http.ErrServerClosed) {
			runErr = nil
		}
		s.runErr = runErr
		s.log.Info("stopped")
		close(s.done)
	})
	if !started {
		return errors.New("apiserver: Run called twice")
	}
	return runErr
}

// Wait blocks until Run has returned and returns its error.
func (s *Server) Wait() error {
	<-s.done
	return s.runErr
}

// Ready is closed once the server accepts requests.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// URL is the server's https URL (with the actual port when Listen asked for port 0).
func (s *Server) URL() string { return s.url }

// CACertPEM is the cluster CA certificate.
func (s *Server) CACertPEM() []byte { return append([]byte(nil), s.pki.CAPEM...) }

// PrepareDataDir creates the data dir with mode 0700, or tightens an existing one to
// 0700: it holds the CA key, the tokens and etcd's data, which no other user may read
// (kube-apiserver's and etcd's own directories are 0700 too).
func PrepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data dir %s is not a directory", dir)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("data dir %s: tighten mode %#o to 0700: %w", dir, fi.Mode().Perm(), err)
		}
	}
	return nil
}

// AdminKubeconfigPath is <data-dir>/admin.kubeconfig.
func (s *Server) AdminKubeconfigPath() string {
	return filepath.Join(s.opts.DataDir, "admin.kubeconfig")
}

// JoinToken is the token kubelets on other hosts join with (also in <data-dir>/join-token).
func (s *Server) JoinToken() string {
	return "K10" + authn.CAHash(s.pki.CAPEM) + "::" + s.auth.File.Join
}

// AdminRESTConfig is a client config with full rights (group system:masters).
func (s *Server) AdminRESTConfig() *rest.Config { return s.restConfig(s.auth.File.Admin) }

// NodeRESTConfig is the credential of the kubelet of nodeName (user
// system:node:<nodeName>, group system:nodes) for components in this process, issued on
// first use and persisted. Node credentials expire (Options.NodeCredentialTTL): the
// config's transport sends the current token on every request and rotates it here when
// due, so a long-lived client keeps working; BearerToken is the token at the time of the
// call.
func (s *Server) NodeRESTConfig(nodeName string) (*rest.Config, error) {
	if err := authn.ValidNodeName(field.NewPath("nodeName"), nodeName); err != nil {
		return nil, fmt.Errorf("apiserver: node credential: %w", err)
	}
	tok, err := s.auth.CurrentNodeToken(nodeName)
	if err != nil {
		return nil, fmt.Errorf("apiserver: issue token for node %s: %w", nodeName, err)
	}
	cfg := s.restConfig(tok)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &nodeTokenTransport{rt: rt, node: nodeName, auth: s.auth}
	}
	return cfg, nil
}

// nodeTokenTransport sets the node's current token on each request.
type nodeTokenTransport struct {
	rt   http.RoundTripper
	node string
	auth *authn.Authenticator
}

func (t *nodeTokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.auth.CurrentNodeToken(t.node)
	if err != nil {
		return nil, fmt.Errorf("node credential for %s: %w", t.node, err)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tok)
	return t.rt.RoundTrip(req)
}

func (s *Server) restConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            s.url,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CACertPEM()},
		QPS:             1000,
		Burst:           2000,
	}
}

func (s *Server) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["wasmkube"] = &clientcmdapi.Cluster{Server: s.url, CertificateAuthorityData: s.pki.CAPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: s.auth.File.Admin}
	cfg.Contexts["wasmkube"] = &clientcmdapi.Context{Cluster: "wasmkube", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "wasmkube"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("apiserver: encode admin.kubeconfig: %w", err)
	}
	return authn.WriteFileAtomic(s.AdminKubeconfigPath(), b, 0o600)
}

func (s *Server) writeJoinToken() error {
	return authn.WriteFileAtomic(filepath.Join(s.opts.DataDir, joinTokenFile), []byte(s.JoinToken()+"\n"), 0o600)
}

// stoppedCh is closed when Run starts shutting down; watch and log streams end then.
func (s *Server) stoppedCh() <-chan struct{} { return s.stopping }
