package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/controller"
)

func init() { rootCmd.AddCommand(newServerCmd()) }

// newServerCmd builds `wasmkube server`.
func newServerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the Kubernetes-compatible API server (on an embedded etcd unless --etcd-endpoints)",
		Long: `Run wasmkube's API server in the foreground until SIGINT/SIGTERM.

On first start it creates, in the data dir: a CA and serving certificate (pki/), the admin
token and admin.kubeconfig (use it with kubectl --kubeconfig), and join-token, with which
kubelets on other hosts obtain their node credential. A restart on the same data dir keeps
every object and credential.

Settings, highest priority first: flags, environment (WASMKUBE_DATA_DIR, WASMKUBE_LISTEN,
WASMKUBE_ADVERTISE_ADDRESS, WASMKUBE_ETCD_ENDPOINTS, WASMKUBE_DEFAULT_TOLERATION_SECONDS, WASMKUBE_LOG_LEVEL,
WASMKUBE_ENCRYPTION_PROVIDER_CONFIG, WASMKUBE_TOKEN_AUTH_FILE), then
the config file keys:
  server.dataDir                    data directory (required)
  server.listen                     host:port (default 127.0.0.1:6443)
  server.advertiseAddress           IPv4 address pods reach the server at (default: the listen address)
  server.etcdEndpoints              list of external etcd URLs (default: embedded etcd)
  controller.defaultTolerationSeconds  not-ready/unreachable toleration of pods (default 300)
  server.logLevel                   debug|info|warn|error (default info)
  server.encryptionProviderConfig   EncryptionConfiguration file (default <data-dir>/encryption-config.yaml)
  server.tokenAuthFile              static user tokens, CSV token,user,uid[,"groups"] (default none)
  server.explorerRecords            decision records the server keeps (default 10000; negative: none; docs/explorer.md)

The config file's admission: section declares wasm admission policies (docs/config.md); they
are swapped live when the file changes.

Unless --apiserver-only, the scheduler (profiles and wasm plugins from the config file's
scheduler: section, reloaded when the file changes) and the controller manager run in the
same process, each leader-elected through a Lease in kube-system. A component that loses
its Lease (another server took it, or it could not renew it for 10 s, as while etcd has no
quorum) stops its work and campaigns again; the process does not exit. /readyz lists them
(/readyz?verbose): not ok while one starts, stops a term or has stopped; a standby is ok.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, level, err := serverOptions(cmd)
			if err != nil {
				return err
			}
			opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			if a := opts.AdvertiseAddress; a != "" && !localAddress(a) {
				// Bound anyway (IP_FREEBIND): the address may be a bridge's that appears later.
				opts.Logger.Warn("the advertise address is not an address of this machine yet: pods reach the API server there only once it is", "advertiseAddress", a)
			}
			ctx, stop := signalContext()
			defer stop()
			// The API server outlives a stop signal briefly, so that the in-process
			// scheduler and controller manager can hand back their leader Leases and a
			// restart does not wait for them to expire. During start-up a signal stops
			// it at once.
			apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
			defer stopAPI()
			stopAPIOnSignal := context.AfterFunc(ctx, stopAPI)
			apiOnly, _ := cmd.Flags().GetBool("apiserver-only")
			configFile, _ := cmd.Flags().GetString("config")
			// 0700 before anything is written into it (the wasm cache comes first).
			if err := apiserver.PrepareDataDir(opts.DataDir); err != nil {
				return err
			}
			adm, admPlugins, err := newAdmission(apiCtx, opts.DataDir, configFile, opts.Logger)
			if err != nil {
				return err
			}
			opts.Admission = admPlugins
			opts.RestartProcess = restartSelf(opts.Logger)
			srv, err := startAPIServer(apiCtx, opts)
			if err != nil {
				return err
			}
			insecure, _ := cmd.Flags().GetStringSlice("insecure-registry")
			runAdmission(apiCtx, adm, srv, moduleCache(filepath.Join(opts.DataDir, "wasm-modules"), insecure), opts.Logger)
			if !apiOnly {
				stopAPIOnSignal()
				go func() {
					<-ctx.Done()
					awaitLeasesReleased(apiCtx, srv.AdminRESTConfig(), leaseReleaseGrace)
					stopAPI()
				}()
				cs, err := readControllerSettings(configFile)
				if err != nil {
					stop()
					_ = srv.Wait()
					return err
				}
				cs.tolerationSeconds = opts.DefaultTolerationSeconds
				cs.insecureRegistries = insecure
				// Several servers may share one etcd: their schedulers and controller
				// managers elect a leader through a Lease, so only one of each acts.
				metricsAddr, _ := cmd.Flags().GetString("metrics-addr")
				if err := startControlPlane(ctx, srv, opts.DataDir, configFile, metricsAddr, cs, true, opts.Logger); err != nil {
					stop()
					_ = srv.Wait()
					return err
				}
			}
			fmt.Fprintf(os.Stderr, "wasmkube API server at %s\n  kubectl --kubeconfig %s get nodes\n", srv.URL(), srv.AdminKubeconfigPath())
			return srv.Wait()
		},
	}
	f := cmd.Flags()
	f.String("data-dir", "", "data directory for etcd, certificates and tokens")
	f.String("listen", apiserver.DefaultListen, "HTTPS listen address host:port")
	f.String("advertise-address", "", "IPv4 address the kubernetes Service's Endpoints carry, where pods reach the API (as kube-apiserver's flag); the server also listens there at the --listen port when --listen does not cover it (default: the --listen address)")
	f.StringSlice("etcd-endpoints", nil, "external etcd cluster URLs (comma separated); default is an embedded etcd in the data dir")
	f.Int64("default-toleration-seconds", 300, "tolerationSeconds of the not-ready/unreachable tolerations added to pods")
	f.String("log-level", "info", "log level: debug, info, warn, error")
	f.String("encryption-provider-config", "", "EncryptionConfiguration file for encryption at rest (default: <data-dir>/encryption-config.yaml, created with a fresh AES-GCM key for secrets)")
	f.String("token-auth-file", "", "CSV file of static user tokens (token,user,uid[,\"group1,group2\"]), as kube-apiserver's --token-auth-file; read at start (docs/security.md)")
	f.StringSlice("insecure-registry", nil, "a registry (host:port) that may be reached over plain HTTP for WasmPolicy modules, by the admission policies, the in-process scheduler and the controller that resolves tags (repeatable; loopback registries always may)")
	f.String("config", "", "YAML config file (keys under server., scheduler., admission., controller.; the scheduler and admission sections are reloaded on change)")
	f.Bool("profiling", true, "serve /debug/pprof/ to callers allowed get on that nonResourceURL (as kube-apiserver's --profiling); in process, the scheduler and controller manager are profiled with it")
	f.Bool("apiserver-only", false, "run only the API server, without the in-process scheduler and controller manager")
	f.String("metrics-addr", defaultSchedulerMetricsAddr, "where the in-process scheduler serves /metrics (empty: off); the API server's /metrics has the rest")
	return cmd
}

// serverFlagKeys maps flags to config keys and environment variables.
var serverFlagKeys = []struct{ flag, key, env string }{
	{"data-dir", "server.dataDir", "WASMKUBE_DATA_DIR"},
	{"listen", "server.listen", "WASMKUBE_LISTEN"},
	{"advertise-address", "server.advertiseAddress", "WASMKUBE_ADVERTISE_ADDRESS"},
	{"etcd-endpoints", "server.etcdEndpoints", "WASMKUBE_ETCD_ENDPOINTS"},
	{"default-toleration-seconds", "controller.defaultTolerationSeconds", "WASMKUBE_DEFAULT_TOLERATION_SECONDS"},
	{"log-level", "server.logLevel", "WASMKUBE_LOG_LEVEL"},
	{"encryption-provider-config", "server.encryptionProviderConfig", "WASMKUBE_ENCRYPTION_PROVIDER_CONFIG"},
	{"token-auth-file", "server.tokenAuthFile", "WASMKUBE_TOKEN_AUTH_FILE"},
}

// serverOptions resolves flags > environment > config file > defaults.
func serverOptions(cmd *cobra.Command) (apiserver.Options, slog.Level, error) {
	v := viper.New()
	for _, k := range serverFlagKeys {
		if err := v.BindPFlag(k.key, cmd.Flags().Lookup(k.flag)); err != nil {
			return apiserver.Options{}, 0, err
		}
		if err := v.BindEnv(k.key, k.env); err != nil {
			return apiserver.Options{}, 0, err
		}
	}
	if cfg, _ := cmd.Flags().GetString("config"); cfg != "" {
		if err := readConfigInto(v, cfg); err != nil {
			return apiserver.Options{}, 0, err
		}
	}
	opts := apiserver.Options{
		DataDir:                  v.GetString("server.dataDir"),
		Listen:                   v.GetString("server.listen"),
		AdvertiseAddress:         v.GetString("server.advertiseAddress"),
		DefaultTolerationSeconds: v.GetInt64("controller.defaultTolerationSeconds"),
		EncryptionConfig:         v.GetString("server.encryptionProviderConfig"),
		ExplorerRecords:          v.GetInt("server.explorerRecords"),
	}
	if err := apiserver.CheckAdvertiseAddress(opts.AdvertiseAddress); err != nil {
		return opts, 0, fmt.Errorf("server.advertiseAddress (--advertise-address): %w", err)
	}
	tokenFile, err := checkTokenAuthFile(v.GetString("server.tokenAuthFile"))
	if err != nil {
		return opts, 0, err
	}
	opts.TokenAuthFile = tokenFile
	if on, err := cmd.Flags().GetBool("profiling"); err == nil && !on {
		opts.DisableProfiling = true
	}
	for _, e := range v.GetStringSlice("server.etcdEndpoints") {
		for _, p := range strings.Split(e, ",") {
			if p = strings.TrimSpace(p); p != "" {
				if err := checkEtcdEndpoint(p); err != nil {
					return opts, 0, fmt.Errorf("server.etcdEndpoints: %w", err)
				}
				opts.EtcdEndpoints = append(opts.EtcdEndpoints, p)
			}
		}
	}
	if opts.DataDir == "" {
		return opts, 0, errors.New("--data-dir is required (or WASMKUBE_DATA_DIR, or server.dataDir in --config)")
	}
	if opts.DefaultTolerationSeconds < 0 {
		return opts, 0, fmt.Errorf("controller.defaultTolerationSeconds (--default-toleration-seconds): %d must not be negative", opts.DefaultTolerationSeconds)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(v.GetString("server.logLevel"))); err != nil {
		return opts, 0, fmt.Errorf("server.logLevel: %q is not one of debug, info, warn, error", v.GetString("server.logLevel"))
	}
	return opts, level, nil
}

// startAPIServer creates the API server, runs it until ctx ends and returns once it
// accepts requests. Wait on the server for it to finish shutting down.
func startAPIServer(ctx context.Context, opts apiserver.Options) (*apiserver.Server, error) {
	srv, err := apiserver.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	go func() { _ = srv.Run(ctx) }()
	select {
	case <-srv.Ready():
		return srv, nil
	case <-ctx.Done():
		_ = srv.Wait()
		return nil, ctx.Err()
	}
}

// leaseReleaseGrace bounds how long the API server waits, after a stop signal, for this
// host's scheduler and controller manager to release their leader Leases.
const leaseReleaseGrace = 3 * time.Second

// controlPlaneLeases are the kube-system Leases the in-process components hold.
var controlPlaneLeases = []string{"wasmkube-scheduler", controller.LeaseName}

// awaitLeasesReleased returns once no control-plane Lease is held by a component of this
// host (their identities are "<hostname>_<random>"), or after max. Both components
// release on cancellation (ReleaseOnCancel), which needs the API server still serving.
func awaitLeasesReleased(ctx context.Context, cfg *rest.Config, max time.Duration) {
	host, err := os.Hostname()
	if err != nil {
		return
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	for {
		held := false
		for _, name := range controlPlaneLeases {
			l, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				held = true // unknown: keep waiting until max
			case heldByHost(l.Spec.HolderIdentity, host):
				held = true
			}
		}
		if !held {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// heldByHost reports whether a Lease holder identity belongs to a component on host.
func heldByHost(holder *string, host string) bool {
	return holder != nil && strings.HasPrefix(*holder, host+"_")
}

// checkEtcdEndpoint accepts what the etcd client does: http(s)://host:port,
// unix(s)://path, or a bare host:port. Anything else would only fail later as a timeout.
func checkEtcdEndpoint(e string) error {
	if !strings.Contains(e, "://") {
		if _, _, err := net.SplitHostPort(e); err != nil {
			return fmt.Errorf("%q is not an etcd URL (http://host:port, https://host:port or host:port): %w", e, err)
		}
		return nil
	}
	u, err := url.Parse(e)
	if err != nil {
		return fmt.Errorf("%q is not an etcd URL: %w", e, err)
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return fmt.Errorf("%q has no host", e)
		}
	case "unix", "unixs":
	default:
		return fmt.Errorf("%q: scheme %q is not http, https, unix or unixs", e, u.Scheme)
	}
	return nil
}

// checkTokenAuthFile resolves server.tokenAuthFile (empty: none) to an absolute path and
// checks that it is a readable regular file, so a typo is an error naming the key at
// once rather than a failure deep in the API server's start.
func checkTokenAuthFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("server.tokenAuthFile (--token-auth-file): %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("server.tokenAuthFile (--token-auth-file): %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("server.tokenAuthFile (--token-auth-file): %s is not a regular file", abs)
	}
	return abs, nil
}

// localAddress reports whether ip is an address of one of this machine's interfaces.
func localAddress(ip string) bool {
	want := net.ParseIP(ip)
	addrs, err := net.InterfaceAddrs()
	if err != nil || want == nil {
		return false
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(want) {
			return true
		}
	}
	return false
}
