// Package apiservertest starts a real wasmkube API server for tests: embedded etcd in a
// temporary directory, HTTPS on 127.0.0.1 with a free port, stopped when the test ends.
//
//	srv := apiservertest.Start(t)
//	pods, err := srv.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
package apiservertest

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Server is a running test API server.
type Server struct {
	// Config is an admin client config (group system:masters).
	Config *rest.Config
	// Client is a typed clientset for Config.
	Client kubernetes.Interface
	// KubeconfigPath is the admin kubeconfig, for kubectl --kubeconfig.
	KubeconfigPath string
	// DataDir holds etcd, the PKI and the tokens.
	DataDir string
	// URL is https://127.0.0.1:<port>.
	URL string
	// API is the server itself.
	API *apiserver.Server

	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan error
}

type options struct {
	dataDir    string
	admission  []admission.Plugin
	logger     *slog.Logger
	toleration int64
	compaction time.Duration
	etcd       []string
	nodeTTL    time.Duration
	tokenFile  string
	advertise  string
	listen     string
}

// Option configures Start.
type Option func(*options)

// WithDataDir uses dir instead of a fresh t.TempDir(), so a test can stop a server and
// start another on the same data (restart persistence).
func WithDataDir(dir string) Option { return func(o *options) { o.dataDir = dir } }

// WithAdmission appends admission plugins to the built-in chain.
func WithAdmission(plugins ...admission.Plugin) Option {
	return func(o *options) { o.admission = append(o.admission, plugins...) }
}

// WithLogger sets the server's logger (by default only errors, on stderr).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithDefaultTolerationSeconds sets the not-ready/unreachable toleration added to pods.
func WithDefaultTolerationSeconds(s int64) Option { return func(o *options) { o.toleration = s } }

// WithCompactionInterval compacts etcd history every d (tests of 410 Gone).
func WithCompactionInterval(d time.Duration) Option { return func(o *options) { o.compaction = d } }

// WithEtcdEndpoints uses an external etcd cluster instead of an embedded one (several
// servers started with the same endpoints serve one cluster).
func WithEtcdEndpoints(urls ...string) Option { return func(o *options) { o.etcd = urls } }

// WithNodeCredentialTTL sets how long node credentials are valid.
func WithNodeCredentialTTL(d time.Duration) Option { return func(o *options) { o.nodeTTL = d } }

// WithTokenAuthFile sets Options.TokenAuthFile (static user tokens, token,user,uid,groups).
func WithTokenAuthFile(path string) Option { return func(o *options) { o.tokenFile = path } }

// WithAdvertiseAddress sets Options.AdvertiseAddress: the kubernetes Endpoints carry it and
// the server also listens there (a test node's pod-bridge gateway, for pods that call the
// API through kubernetes.default.svc).
func WithAdvertiseAddress(ip string) Option { return func(o *options) { o.advertise = ip } }

// WithListen serves on addr instead of 127.0.0.1:0 (a restart on the same port keeps
// the admin kubeconfig unchanged).
func WithListen(addr string) Option { return func(o *options) { o.listen = addr } }

// Start runs an API server until the test ends (or Stop is called).
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := &options{}
	for _, f := range opts {
		f(o)
	}
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	if o.listen == "" {
		o.listen = "127.0.0.1:0"
	}
	ctx, cancel := context.WithCancel(context.Background())
	api, err := apiserver.New(ctx, apiserver.Options{
		DataDir: o.dataDir, Listen: o.listen, Admission: o.admission, Logger: o.logger,
		DefaultTolerationSeconds: o.toleration, CompactionInterval: o.compaction,
		EtcdEndpoints: o.etcd, NodeCredentialTTL: o.nodeTTL, TokenAuthFile: o.tokenFile,
		AdvertiseAddress: o.advertise,
	})
	if err != nil {
		cancel()
		t.Fatalf("apiservertest: start API server: %v", err)
	}
	s := &Server{API: api, DataDir: o.dataDir, URL: api.URL(), KubeconfigPath: api.AdminKubeconfigPath(),
		Config: api.AdminRESTConfig(), cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- api.Run(ctx) }()
	select {
	case <-api.Ready():
	case err := <-s.done:
		cancel()
		t.Fatalf("apiservertest: API server stopped at start: %v", err)
	}
	s.Client, err = kubernetes.NewForConfig(s.Config)
	if err != nil {
		s.Stop()
		t.Fatalf("apiservertest: client: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop shuts the server down and waits until etcd is closed. It is safe to call more
// than once; Start registers it with t.Cleanup.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
	})
}

// NodeConfig is the kubelet credential of nodeName (user system:node:<nodeName>).
func (s *Server) NodeConfig(t testing.TB, nodeName string) *rest.Config {
	t.Helper()
	cfg, err := s.API.NodeRESTConfig(nodeName)
	if err != nil {
		t.Fatalf("apiservertest: node credential for %s: %v", nodeName, err)
	}
	return cfg
}

// NetworkPolicyConfig is the credential of nodeName's NetworkPolicy enforcer (user
// system:wasmkube:network-policy-agent:<nodeName>), issued with the node's.
func (s *Server) NetworkPolicyConfig(t testing.TB, nodeName string) *rest.Config {
	t.Helper()
	cfg, err := s.API.NetworkPolicyRESTConfig(nodeName)
	if err != nil {
		t.Fatalf("apiservertest: NetworkPolicy enforcer credential for %s: %v", nodeName, err)
	}
	return cfg
}

// SchedulerConfig is the credential the in-process scheduler of `wasmkube server` uses
// (user system:kube-scheduler, authorized by RBAC's system:kube-scheduler role only).
func (s *Server) SchedulerConfig(t testing.TB) *rest.Config {
	t.Helper()
	return s.componentConfig(t, apiserver.SchedulerUser)
}

// ControllerManagerConfig is the in-process controller manager's credential (user
// system:kube-controller-manager, RBAC's system:kube-controller-manager role only).
func (s *Server) ControllerManagerConfig(t testing.TB) *rest.Config {
	t.Helper()
	return s.componentConfig(t, apiserver.ControllerManagerUser)
}

func (s *Server) componentConfig(t testing.TB, user string) *rest.Config {
	t.Helper()
	cfg, err := s.API.ComponentRESTConfig(user)
	if err != nil {
		t.Fatalf("apiservertest: %v", err)
	}
	return cfg
}
