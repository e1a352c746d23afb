package storage

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/runtime"
)

// Defaults applied by NewBackend to zero Config fields.
const (
	DefaultCompactionInterval = 5 * time.Minute
	DefaultBookmarkInterval   = time.Minute
	DefaultWatchCacheSize     = 4096
	DefaultWatchBuffer        = 1024
	// maxObjectBytes bounds one stored object. The API server accepts bodies up to 3 MiB,
	// so etcd's request limit (and the client's message limit) must be above that.
	maxObjectBytes = 4 << 20
)

// Config configures a Backend.
type Config struct {
	// DataDir holds the embedded etcd's data under DataDir/etcd. Required when Endpoints
	// is empty.
	DataDir string
	// Endpoints of an external etcd cluster (for example http://10.0.0.1:2379). Empty
	// means an embedded etcd.
	Endpoints []string
	// CAFile, CertFile and KeyFile secure the connection to an external cluster with
	// https:// endpoints: CAFile verifies the members' certificates, CertFile/KeyFile
	// authenticate wasmkube to them (etcd --client-cert-auth). Empty means plain TLS
	// with the system roots (https) or no TLS (http).
	CAFile, CertFile, KeyFile string
	// CompactionInterval: every interval the store compacts etcd's history to the
	// revision it saw one interval earlier. Default 5m; negative disables compaction.
	CompactionInterval time.Duration
	// BookmarkInterval between BOOKMARK events of watches that allow them. Default 1m.
	BookmarkInterval time.Duration
	// WatchCacheSize is the number of recent events each resource's watch cache keeps,
	// so that a watch from a recent resourceVersion is served from memory. Default 4096.
	WatchCacheSize int
	// WatchBuffer is the number of events a single watcher may fall behind before it is
	// closed (its client re-watches from its last resourceVersion). Default 1024.
	WatchBuffer int
	// Logger for storage and embedded etcd messages. Default slog.Default().
	Logger *slog.Logger
	// MinFreeBytes: while the embedded etcd's disk has less free space, creates and
	// updates are refused with ErrNoSpace (space.go). Default DefaultMinFreeBytes (96 MiB);
	// negative disables the check.
	MinFreeBytes int64
	// ReserveBytes is the size of the space reserve file kept next to the embedded etcd's
	// data, released when the disk is nearly full. Default DefaultReserveBytes (96 MiB);
	// negative: none.
	ReserveBytes int64
	// QuotaBackendBytes is the embedded etcd's backend quota: beyond it etcd raises its
	// NOSPACE alarm and refuses puts. Default 2 GiB or half of the data dir's filesystem,
	// whichever is smaller.
	QuotaBackendBytes int64
	// RestartProcess, when set, is called (once, from the space monitor) after the
	// embedded etcd gave up on a failed write and its disk has room again: etcd cannot be
	// started anew in the same process then (the goroutine that failed held its locks and
	// its database's file lock), so the command restarts the whole process, as a
	// supervisor restarts a crashed etcd. etcd's WAL holds every write it acknowledged.
	// Nil: writes stay refused with a 503 asking for a restart.
	RestartProcess func(reason string)

	// dialOptions are added to the etcd client's (tests inject faults with interceptors).
	dialOptions []grpc.DialOption
	// legacyJSON writes built-in types as JSON, as builds before protobuf storage did
	// (tests write such a data dir and read it back).
	legacyJSON bool
}

func (c *Config) setDefaults() {
	if c.CompactionInterval == 0 {
		c.CompactionInterval = DefaultCompactionInterval
	}
	if c.BookmarkInterval <= 0 {
		c.BookmarkInterval = DefaultBookmarkInterval
	}
	if c.WatchCacheSize <= 0 {
		c.WatchCacheSize = DefaultWatchCacheSize
	}
	if c.WatchBuffer <= 0 {
		c.WatchBuffer = DefaultWatchBuffer
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MinFreeBytes == 0 {
		c.MinFreeBytes = DefaultMinFreeBytes
	}
	if c.ReserveBytes == 0 {
		c.ReserveBytes = DefaultReserveBytes
	}
}

// Backend is a connection to etcd (embedded or external) shared by every resource's
// store. It owns the per-resource watch caches and the compactor.
type Backend struct {
	cfg    Config
	log    *slog.Logger
	client *clientv3.Client
	etcdMu sync.Mutex  // guards etcd, which restartEmbedded replaces
	etcd   *embed.Etcd // nil for an external cluster
	lock   *os.File    // flock on DataDir/etcd.lock while the embedded etcd runs

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	leases leaseManager
	space  *spaceGuard

	mu      sync.Mutex
	cachers map[string]*cacher

	// etcdFatal is the message of the embedded etcd's fatal error, once it had one
	// (etcdlog.go): it has stopped, and writes are answered with this reason.
	etcdFatal atomic.Pointer[string]
	// restartAsked: Config.RestartProcess was called (once is enough).
	restartAsked atomic.Bool

	closeOnce sync.Once
	closeErr  error
	closing   atomic.Bool // quiets the embedded etcd's shutdown noise
}

// NewBackend starts an embedded etcd under cfg.DataDir/etcd (or connects to
// cfg.Endpoints), waits until it serves requests, and starts the compactor.
// Close releases everything it started.
func NewBackend(ctx context.Context, cfg Config) (*Backend, error) {
	cfg.setDefaults()
	b := &Backend{cfg: cfg, log: cfg.Logger.With("component", "storage"), cachers: map[string]*cacher{}}
	var endpoints []string
	var tlsConfig *tls.Config // only for an external cluster; the embedded one is loopback
	if len(cfg.Endpoints) == 0 {
		if cfg.DataDir == "" {
			return nil, errors.New("storage: Config.DataDir is required for the embedded etcd (or set Config.Endpoints)")
		}
		lock, err := lockDataDir(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		b.lock = lock
		b.space = newSpaceGuard(cfg, filepath.Join(cfg.DataDir, "etcd"))
		// Before etcd starts: on a full disk the reserve is released so that it can.
		b.space.keepReserve(b.log)
		if d, err := statDisk(cfg.DataDir); err == nil && d.free < cfg.MinFreeBytes {
			b.log.Warn("the data dir's disk is nearly full: starting with writes refused until space is freed",
				"dir", cfg.DataDir, "free", d.free, "minFree", cfg.MinFreeBytes)
		}
		b.space.fatal = &b.etcdFatal
		b.space.selfRestart = cfg.RestartProcess != nil
		e, err := startEmbedded(ctx, filepath.Join(cfg.DataDir, "etcd"), "127.0.0.1:0", b.space.quota, cfg.Logger, &b.closing, &b.etcdFatal)
		if err != nil {
			lock.Close()
			return nil, err
		}
		b.etcd = e
		for _, l := range e.Clients {
			endpoints = append(endpoints, "http://"+l.Addr().String())
		}
	} else {
		b.space = &spaceGuard{quota: cfg.QuotaBackendBytes} // the cluster's own disks and quota
		endpoints = cfg.Endpoints
		var err error
		if tlsConfig, err = cfg.clientTLS(); err != nil {
			return nil, err
		}
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		TLS:                tlsConfig,
		DialTimeout:        10 * time.Second,
		MaxCallSendMsgSize: maxObjectBytes + 64<<10,
		MaxCallRecvMsgSize: 0, // unlimited: lists can be large
		Context:            context.WithoutCancel(ctx),
		Logger:             zap.NewNop(),
		DialOptions:        cfg.dialOptions,
	})
	if err != nil {
		b.stopEmbedded()
		return nil, fmt.Errorf("storage: connect to etcd %v: %w", endpoints, err)
	}
	b.client = client
	b.leases.client = client
	if err := b.waitReady(ctx, endpoints); err != nil {
		client.Close()
		b.stopEmbedded()
		return nil, err
	}
	b.ctx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.runSpaceMonitor(b.ctx)
	}()
	if cfg.CompactionInterval > 0 {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.runCompactor(b.ctx, cfg.CompactionInterval)
		}()
	}
	b.log.Info("storage ready", "endpoints", endpoints, "embedded", b.etcd != nil)
	return b, nil
}

// clientTLS builds the client's TLS configuration from the files in cfg; nil when
// none are set.
func (c *Config) clientTLS() (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" {
		return nil, nil
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, fmt.Errorf("storage: etcd client certificate needs both CertFile (%q) and KeyFile (%q)", c.CertFile, c.KeyFile)
	}
	info := transport.TLSInfo{CertFile: c.CertFile, KeyFile: c.KeyFile, TrustedCAFile: c.CAFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("storage: etcd TLS files (ca %q, cert %q, key %q): %w", c.CAFile, c.CertFile, c.KeyFile, err)
	}
	return cfg, nil
}

// waitReady retries Ready until it succeeds or ctx ends; an external cluster may still
// be electing a leader when we connect.
func (b *Backend) waitReady(ctx context.Context, endpoints []string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := b.Ready(rctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("storage: etcd at %v not ready (is it running and reachable?): %w", endpoints, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lockDataDir takes an exclusive lock on DataDir/etcd.lock. Without it a second
// process (or Backend) on the same data dir would block forever inside etcd waiting for
// the database file; with it, it fails at once and says why.
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("storage: create data dir: %w", err)
	}
	path := filepath.Join(dir, "etcd.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: data dir %s is in use by another wasmkube server (lock %s held): stop it or choose another --data-dir: %w", dir, path, err)
	}
	return f, nil
}

// startEmbedded starts a single-member etcd in dir. Client and peer listeners bind
// 127.0.0.1 port 0, so any number of embedded instances run side by side; the client
// connects to whatever port the kernel picked.
func startEmbedded(ctx context.Context, dir, clientHost string, quota int64, log *slog.Logger, closing *atomic.Bool, fatal *atomic.Pointer[string]) (*embed.Etcd, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("storage: create etcd data dir: %w", err)
	}
	any0 := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	client := url.URL{Scheme: "http", Host: clientHost}
	ec := embed.NewConfig()
	ec.Name = "wasmkube"
	ec.Dir = dir
	ec.ListenClientUrls = []url.URL{client}
	ec.AdvertiseClientUrls = []url.URL{client}
	ec.ListenPeerUrls = []url.URL{any0}
	ec.AdvertisePeerUrls = []url.URL{any0}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.MaxRequestBytes = maxObjectBytes
	ec.QuotaBackendBytes = quota
	ec.AutoCompactionRetention = "0" // the Backend compacts, see runCompactor
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newEtcdLogger(log, closing, fatal))
	ec.Metrics = "basic"
	// Started in a goroutine of its own: a fatal error during the start ends only that
	// goroutine (etcdlog.go), and is returned here.
	type started struct {
		e   *embed.Etcd
		err error
	}
	ch := make(chan started, 1)
	go func() {
		done := false
		defer func() {
			if !done {
				msg := "unknown"
				if m := fatal.Load(); m != nil {
					msg = *m
				}
				ch <- started{err: fmt.Errorf("etcd stopped with a fatal error: %s", msg)}
			}
		}()
		e, err := embed.StartEtcd(ec)
		done = true
		ch <- started{e, err}
	}()
	st := <-ch
	e, err := st.e, st.err
	if err != nil {
		return nil, fmt.Errorf("storage: start embedded etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("storage: embedded etcd in %s failed: %w", dir, err)
	case <-time.After(60 * time.Second):
		closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("storage: embedded etcd in %s did not become ready within 60s", dir)
	case <-ctx.Done():
		closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("storage: start embedded etcd in %s: %w", dir, ctx.Err())
	}
	log.Info("embedded etcd started", "dir", dir, "client", e.Clients[0].Addr().String())
	return e, nil
}

func (b *Backend) stopEmbedded() {
	b.closing.Store(true)
	b.etcdMu.Lock()
	defer b.etcdMu.Unlock()
	if b.etcd != nil {
		b.etcd.Close()
	}
	if b.lock != nil {
		b.lock.Close() // releases the flock
	}
}

// Client is the underlying etcd client, for components that need etcd directly (for
// example leader election); objects must go through ForResource.
func (b *Backend) Client() *clientv3.Client { return b.client }

// Ready returns nil when etcd answers a linearizable read (a leader exists and the
// member is reachable). It backs the API server's /readyz.
func (b *Backend) Ready(ctx context.Context) error {
	_, err := b.client.Get(ctx, "health")
	if err != nil {
		return fmt.Errorf("storage: etcd health check: %w", err)
	}
	return nil
}

// ForResource returns the store for resource (for example "pods"). newFunc returns an
// empty object of the resource's type (&corev1.Pod{}), newListFunc an empty list
// (&corev1.PodList{}). Stores of the same resource share one watch cache. Options:
// WithTTL.
func (b *Backend) ForResource(resource string, newFunc, newListFunc func() runtime.Object, opts ...ResourceOption) Interface {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.cachers[resource]
	if !ok {
		c = newCacher(b, resource, newFunc)
		b.cachers[resource] = c
	}
	s := &store{
		b:           b,
		resource:    resource,
		codec:       newCodec(newFunc, b.cfg.legacyJSON),
		newListFunc: newListFunc,
		cacher:      c,
	}
	for _, opt := range opts {
		opt(s)
	}
	if s.codec.t == nil {
		s.recent = newRecentStates(maxRecentBytes)
	}
	return s
}

// StartWatchCaches starts the watch cache of every resource a store was made for: its
// etcd watch and its state, from which reads with resourceVersion=0 or "not older than"
// are served (cacheread.go). A cache that cannot start now (etcd does not answer) is
// logged and starts on first use.
func (b *Backend) StartWatchCaches(ctx context.Context) {
	b.mu.Lock()
	cs := make([]*cacher, 0, len(b.cachers))
	for _, c := range b.cachers {
		cs = append(cs, c)
	}
	b.mu.Unlock()
	for _, c := range cs {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := c.ensureStarted(sctx); err != nil {
			b.log.Warn("watch cache not started; it starts on first use", "resource", c.resource, "err", err)
		}
		cancel()
	}
}

// EtcdWatchCount is the number of etcd watches the watch caches hold open: at most one
// per resource however many clients watch it.
func (b *Backend) EtcdWatchCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.cachers {
		if c.running() {
			n++
		}
	}
	return n
}

// Close stops the watch caches and the compactor, closes the client and, if embedded,
// stops etcd. Open watches end (their result channels close).
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.cancel()
		b.mu.Lock()
		cs := make([]*cacher, 0, len(b.cachers))
		for _, c := range b.cachers {
			cs = append(cs, c)
		}
		b.mu.Unlock()
		for _, c := range cs {
			c.stop()
		}
		b.wg.Wait()
		b.closeErr = b.client.Close()
		b.stopEmbedded()
	})
	return b.closeErr
}
