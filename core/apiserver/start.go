package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authn"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/core/apiserver/openapi"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/apiserver/serviceaccount"
	"github.com/wasmkube/wasmkube/core/apiserver/validation"
	"github.com/wasmkube/wasmkube/core/storage"
)

// The phases of New, in order.

// withDefaults fills in Options' defaults, checks the addresses and prepares the data
// dir; host is the listen address's host.
func withDefaults(opts Options) (_ Options, host string, _ error) {
	if opts.DataDir == "" {
		return opts, "", errors.New("apiserver: Options.DataDir is required")
	}
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.EventTTL <= 0 {
		opts.EventTTL = time.Hour
	}
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = DefaultServiceCIDR
	}
	if opts.DefaultTolerationSeconds == 0 {
		opts.DefaultTolerationSeconds = 300
	}
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return opts, "", fmt.Errorf("apiserver: invalid listen address %q: %w", opts.Listen, err)
	}
	if err := CheckAdvertiseAddress(opts.AdvertiseAddress); err != nil {
		return opts, "", fmt.Errorf("apiserver: %w", err)
	}
	if err := PrepareDataDir(opts.DataDir); err != nil {
		return opts, "", fmt.Errorf("apiserver: %w", err)
	}
	return opts, host, nil
}

// newServer is the server before anything is opened.
func newServer(opts Options) *Server {
	return &Server{
		opts: opts, log: opts.Logger.With("component", "apiserver"), reg: registry.NewTable(), authz: &authz.Authorizer{},
		stores: map[schema.GroupVersionResource]*registry.Store{}, metrics: newMetrics(),
		metricsHandler: promhttp.Handler(), openapi: openapi.Handler(),
		ready: make(chan struct{}), stopping: make(chan struct{}), done: make(chan struct{}),
		joinFailures:   authn.NewFailureLimiter(joinFailureRate, joinFailureBurst),
		bearerFailures: authn.NewFailureLimiter(bearerFailureRate, bearerFailureBurst),
	}
}

// loadIdentity loads or creates the PKI, the tokens and the service account signing key
// (through etcd first when several servers share it: authn/identity.go).
func (s *Server) loadIdentity(ctx context.Context, host string) error {
	pkiDir := filepath.Join(s.opts.DataDir, "pki")
	var shared *authn.SharedIdentity
	if len(s.opts.EtcdEndpoints) > 0 {
		shared = authn.NewSharedIdentity(s.backend, s.opts.DataDir, s.opts.EncryptionConfig == "")
		err := shared.Sync(ctx, func() error {
			if _, err := authn.LoadOrCreatePKI(pkiDir, authn.ServingHosts(host, s.opts.AdvertiseAddress, s.opts.ServiceCIDR)); err != nil {
				return err
			}
			_, err := authn.LoadOrCreateTokens(s.opts.DataDir, s.opts.NodeCredentialTTL)
			return err
		})
		if err != nil {
			return fmt.Errorf("apiserver: %w", err)
		}
	}
	var err error
	if s.pki, err = authn.LoadOrCreatePKI(pkiDir, authn.ServingHosts(host, s.opts.AdvertiseAddress, s.opts.ServiceCIDR)); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	if s.auth, err = authn.LoadOrCreateTokens(s.opts.DataDir, s.opts.NodeCredentialTTL); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	s.auth.Shared = shared
	if s.saTokens, err = serviceaccount.LoadOrCreate(filepath.Join(pkiDir, authn.ServiceAccountKeyFile), serviceaccount.DefaultIssuer); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	s.kubeletClient = newKubeletClient()
	return nil
}

// buildAdmission builds the admission chain; the policy plugins get the object reader
// once it runs (startBackground).
func (s *Server) buildAdmission() (*policyAdmission, error) {
	plugins := []admission.Plugin{
		admission.NamespaceLifecycle{Get: s.getNamespace, Deleting: func(name string) { s.namespaces.forceLive(name) }},
		admission.NodeRestriction{},
		admission.ServiceAccount{Get: s.getServiceAccount},
		admission.Defaulting{Default: defaults.Default},
		admission.DefaultTolerationSeconds{Seconds: s.opts.DefaultTolerationSeconds},
	}
	// As upstream: mutating plugins (the built-in ones, then the caller's: wasm mutating
	// policies), then built-in validation of the mutated object, then the caller's
	// validating plugins. The chain runs every Admit before any Validate.
	plugins = append(plugins, admission.Validation{Create: validation.Validate, Update: validation.ValidateUpdate,
		UpdateSubresource: map[string]func(obj, old runtime.Object) field.ErrorList{"ephemeralcontainers": validation.ValidateEphemeralContainersUpdate}}, s.authz.Escalation(), s.authz.PolicyCapabilities(s.servedResource), customAdmission{s})
	// LimitRanger and Priority (policyadmission.go) after the built-in checks, then the
	// caller's plugins (wasm policies, CEL policies, webhooks), then ResourceQuota last, as
	// upstream orders it: only an object every validator admitted is charged.
	pa := &policyAdmission{s: s}
	plugins = append(plugins, pa.plugins()...)
	plugins = append(plugins, s.opts.Admission...)
	plugins = append(plugins, pa.quota())
	var err error
	if s.chain, err = admission.NewChain(plugins...); err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	return pa, nil
}

// buildStores makes a store per built-in resource (and per version view) and the custom
// resources' from the CRDs in etcd.
func (s *Server) buildStores(ctx context.Context) error {
	alloc, err := registry.NewServiceAllocator(s.opts.ServiceCIDR)
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	enc, err := loadEncryption(s.opts)
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	for _, r := range registry.Builtin() {
		if r.CreateOnly || r.ReadOnly {
			continue
		}
		var ropts []storage.ResourceOption
		if r.Kind == "Event" {
			ropts = append(ropts, storage.WithTTL(s.opts.EventTTL))
		}
		if r.IndexOf != nil {
			ropts = append(ropts, storage.WithWatchIndex(r.IndexOf))
		}
		if t := enc.For(r.GVR.Resource, r.GVR.Group); t != nil {
			ropts = append(ropts, storage.WithTransformer(t))
		}
		if r.StoredAs != nil {
			continue // a version view: made below, over the stored version's storage
		}
		st := &registry.Store{Resource: r, Storage: s.backend.ForResource(r.GVR.Resource, r.NewFunc, r.NewList, ropts...), Chain: s.chain}
		if r.Kind == "Service" {
			st.Alloc = alloc
		}
		s.stores[r.GVR] = st
	}
	for _, r := range registry.Builtin() {
		if r.StoredAs != nil {
			s.stores[r.GVR] = &registry.Store{Resource: r, Chain: s.chain, Storage: registry.ViewOf(r, s.stores[r.StoredAs.GVR].Storage)}
		}
	}
	s.crds = newCustomResources(s)
	if err := s.crds.refresh(ctx); err != nil {
		return fmt.Errorf("apiserver: custom resources: %w", err)
	}
	return nil
}

// seed creates the default namespaces, service accounts, priority classes and storage
// classes.
func (s *Server) seed(ctx context.Context) error {
	if err := s.seedNamespaces(ctx); err != nil {
		return err
	}
	if err := s.seedServiceAccounts(ctx); err != nil {
		return err
	}
	if err := s.seedExtensionAuthentication(ctx); err != nil { // serviceaccounts.go
		return err
	}
	if err := s.seedPriorityClasses(ctx); err != nil {
		return err
	}
	if err := s.seedStorageClasses(ctx); err != nil { // volumes.go
		return err
	}
	return nil
}

// startBackground starts the watch caches and what runs until Run ends: the namespace
// cache, the custom resources' refresh, the token resync, the authorizers and the
// admission object reader.
func (s *Server) startBackground(ctx context.Context, pa *policyAdmission) error {
	// Every resource's watch cache holds its state from the start, as upstream's, so
	// resourceVersion=0 and "not older than" reads are served from memory, also when etcd
	// loses quorum later (docs/storage.md, "Reads from the watch cache").
	s.backend.StartWatchCaches(ctx)
	bg, bgCancel := context.WithCancel(context.WithoutCancel(ctx))
	s.bgCancel = bgCancel
	s.namespaces = &nsCache{st: s.stores[corev1.SchemeGroupVersion.WithResource("namespaces")]}
	go s.namespaces.run(bg)
	go s.crds.run(bg)
	go s.auth.Resync(bg, authn.SharedResyncInterval)
	if err := s.startAuthorizers(ctx, bg); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	reader := newObjectReader(bg, s)
	pa.reader = reader
	s.reader = reader
	for _, p := range s.opts.Admission {
		if w, ok := p.(admission.WantsObjectReader); ok {
			if err := w.SetObjectReader(reader); err != nil {
				return fmt.Errorf("apiserver: %w", err)
			}
		}
	}
	return nil
}

// listen opens the listeners, makes sure the kubernetes Service points here and writes
// admin.kubeconfig and join-token.
func (s *Server) listen(ctx context.Context, host string) error {
	var err error
	if s.ln, err = net.Listen("tcp", s.opts.Listen); err != nil {
		return fmt.Errorf("apiserver: listen on %s: %w", s.opts.Listen, err)
	}
	urlHost := host
	if urlHost == "" || urlHost == "0.0.0.0" || urlHost == "::" {
		urlHost = "127.0.0.1"
	}
	port := s.ln.Addr().(*net.TCPAddr).Port
	s.url = "https://" + net.JoinHostPort(urlHost, fmt.Sprint(port))
	closeListeners := func() {
		s.ln.Close()
		if s.advLn != nil {
			s.advLn.Close()
		}
	}
	if s.advLn, err = listenAdvertised(host, s.opts.AdvertiseAddress, port); err != nil {
		s.ln.Close()
		return fmt.Errorf("apiserver: %w", err)
	}
	if err := s.ensureKubernetesService(ctx, host, port); err != nil {
		closeListeners()
		return fmt.Errorf("apiserver: %w", err)
	}
	for _, write := range []func() error{s.writeKubeconfig, s.writeJoinToken} {
		if err := write(); errors.Is(err, syscall.ENOSPC) {
			// A full disk does not stop the server (docs/storage.md, "A full disk"):
			// files whose content is unchanged are not rewritten, and a changed one
			// (a new listen port) is written at the next start with room.
			s.log.Error("the data dir's disk is full: file left as it was", "err", err)
		} else if err != nil {
			closeListeners()
			return err
		}
	}
	return nil
}
