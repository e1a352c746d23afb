package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestServerOptionsPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(cfg, []byte("server:\n  dataDir: /from/file\n  listen: 127.0.0.1:1111\n  etcdEndpoints: [http://a:2379, http://b:2379]\ncontroller:\n  defaultTolerationSeconds: 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		env      map[string]string
		args     []string
		dataDir  string
		listen   string
		etcd     []string
		tolerate int64
		advert   string
		wantErr  string // in the error
	}{
		{name: "file", args: []string{"--config", cfg}, dataDir: "/from/file", listen: "127.0.0.1:1111", etcd: []string{"http://a:2379", "http://b:2379"}, tolerate: 30},
		{name: "env over file", env: map[string]string{"WASMKUBE_LISTEN": "127.0.0.1:2222", "WASMKUBE_ETCD_ENDPOINTS": "http://c:2379"},
			args: []string{"--config", cfg}, dataDir: "/from/file", listen: "127.0.0.1:2222", etcd: []string{"http://c:2379"}, tolerate: 30},
		{name: "flags over env", env: map[string]string{"WASMKUBE_LISTEN": "127.0.0.1:2222"},
			args:    []string{"--config", cfg, "--listen", "127.0.0.1:3333", "--data-dir", "/from/flag", "--etcd-endpoints", "http://d:2379,http://e:2379"},
			dataDir: "/from/flag", listen: "127.0.0.1:3333", etcd: []string{"http://d:2379", "http://e:2379"}, tolerate: 30},
		{name: "defaults", args: []string{"--data-dir", "/d"}, dataDir: "/d", listen: "127.0.0.1:6443", tolerate: 300},
		{name: "toleration: env over file", env: map[string]string{"WASMKUBE_DEFAULT_TOLERATION_SECONDS": "40"}, args: []string{"--config", cfg},
			dataDir: "/from/file", listen: "127.0.0.1:1111", etcd: []string{"http://a:2379", "http://b:2379"}, tolerate: 40},
		{name: "toleration: flag over env", env: map[string]string{"WASMKUBE_DEFAULT_TOLERATION_SECONDS": "40"}, args: []string{"--config", cfg, "--default-toleration-seconds", "50"},
			dataDir: "/from/file", listen: "127.0.0.1:1111", etcd: []string{"http://a:2379", "http://b:2379"}, tolerate: 50},
		{name: "typo in server section", args: []string{"--config", writeConfig(t, "server:\n  dataDir: /d\n  listn: 127.0.0.1:1\n")}, wantErr: "server.listn: unknown key"},
		{name: "typo in controller section", args: []string{"--config", writeConfig(t, "server:\n  dataDir: /d\ncontroller:\n  nodeMonitorGracePerod: 1m\n")}, wantErr: "controller.nodeMonitorGracePerod: unknown key"},
		{name: "unknown section", args: []string{"--config", writeConfig(t, "sever:\n  dataDir: /d\n")}, wantErr: "sever: unknown key"},
		{name: "wrong type", args: []string{"--config", writeConfig(t, "server:\n  dataDir: /d\n  etcdEndpoints: 5\n")}, wantErr: "server.etcdEndpoints: cannot use a number"},
		{name: "old toleration key", args: []string{"--config", writeConfig(t, "server:\n  dataDir: /d\n  defaultTolerationSeconds: 30\n")}, wantErr: "moved to controller.defaultTolerationSeconds"},
		{name: "data dir required", args: []string{}, wantErr: "--data-dir is required"},
		{name: "bad log level", args: []string{"--data-dir", "/d", "--log-level", "loud"}, wantErr: "server.logLevel"},
		{name: "bare host:port etcd", args: []string{"--data-dir", "/d", "--etcd-endpoints", "127.0.0.1:2379"}, dataDir: "/d", listen: "127.0.0.1:6443", etcd: []string{"127.0.0.1:2379"}, tolerate: 300},
		{name: "etcd endpoint not a URL", args: []string{"--data-dir", "/d", "--etcd-endpoints", "not a url"}, wantErr: "server.etcdEndpoints"},
		{name: "etcd endpoint bad scheme", args: []string{"--data-dir", "/d", "--etcd-endpoints", "ftp://a:2379"}, wantErr: "server.etcdEndpoints"},
		{name: "advertise address: env, flag over env", env: map[string]string{"WASMKUBE_ADVERTISE_ADDRESS": "10.0.0.5"},
			args: []string{"--data-dir", "/d", "--advertise-address", "10.42.0.1"}, dataDir: "/d", listen: "127.0.0.1:6443", tolerate: 300, advert: "10.42.0.1"},
		{name: "advertise address from env", env: map[string]string{"WASMKUBE_ADVERTISE_ADDRESS": "10.0.0.5"},
			args: []string{"--data-dir", "/d"}, dataDir: "/d", listen: "127.0.0.1:6443", tolerate: 300, advert: "10.0.0.5"},
		{name: "advertise address not an IP", args: []string{"--data-dir", "/d", "--advertise-address", "myhost"}, wantErr: "server.advertiseAddress (--advertise-address): advertise address \"myhost\""},
		{name: "etcd endpoint without host", args: []string{"--data-dir", "/d", "--etcd-endpoints", "http://"}, wantErr: "server.etcdEndpoints"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"WASMKUBE_DATA_DIR", "WASMKUBE_LISTEN", "WASMKUBE_ETCD_ENDPOINTS", "WASMKUBE_DEFAULT_TOLERATION_SECONDS", "WASMKUBE_LOG_LEVEL", "WASMKUBE_ADVERTISE_ADDRESS"} {
				t.Setenv(k, c.env[k])
				if c.env[k] == "" {
					os.Unsetenv(k)
				}
			}
			cmd := newServerCmd()
			if err := cmd.Flags().Parse(c.args); err != nil {
				t.Fatal(err)
			}
			opts, _, err := serverOptions(cmd)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.DataDir != c.dataDir || opts.Listen != c.listen || !reflect.DeepEqual(opts.EtcdEndpoints, c.etcd) || opts.DefaultTolerationSeconds != c.tolerate || opts.AdvertiseAddress != c.advert {
				t.Fatalf("got %+v", opts)
			}
		})
	}
}

// writeConfig writes a config file for one case and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "wasmkube.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServerCommandStopsOnSIGTERMAndRestarts runs `wasmkube server` in process, stops it
// with SIGTERM (which the command catches) and starts it again on the same data dir. The
// signal goes to the whole test process, so this test must never run in parallel.
// runServerCmd runs `wasmkube server` in process on dir until the returned stop sends
// SIGTERM.
func runServerCmd(t *testing.T, dir string, extra ...string) (stop func() error, client kubernetes.Interface) {
	t.Helper()
	{
		cmd := newServerCmd()
		if err := cmd.Flags().Parse(append([]string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--log-level", "error"}, extra...)); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(filepath.Join(dir, "admin.kubeconfig"))
		done := make(chan error, 1)
		go func() { done <- cmd.RunE(cmd, nil) }()
		var cs kubernetes.Interface
		deadline := time.Now().Add(60 * time.Second)
		for cs == nil {
			select {
			case err := <-done:
				t.Fatalf("server exited at start: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("server did not write admin.kubeconfig")
			}
			if cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig")); err == nil {
				if c, err := kubernetes.NewForConfig(cfg); err == nil {
					if _, err := c.Discovery().ServerVersion(); err == nil {
						cs = c
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		return func() error {
			if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			return <-done
		}, cs
	}
}

func TestServerCommandStopsOnSIGTERMAndRestarts(t *testing.T) {
	dir := t.TempDir()
	run := func() (func() error, kubernetes.Interface) { return runServerCmd(t, dir) }
	stop, c := run()
	if _, err := c.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("server after SIGTERM: %v", err)
	}
	stop, c = run()
	defer func() { _ = stop() }()
	if _, err := c.CoreV1().ConfigMaps("default").Get(context.Background(), "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("object after restart: %v", err)
	}
}

// On SIGTERM the API server stays up until the in-process scheduler and controller
// manager have released their Leases, so a restart does not wait for them to expire.
func TestServerCommandReleasesLeasesOnStop(t *testing.T) {
	dir := t.TempDir()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	stop, c := runServerCmd(t, dir)
	deadline := time.Now().Add(60 * time.Second)
	for held := 0; held < len(controlPlaneLeases); {
		if time.Now().After(deadline) {
			_ = stop()
			t.Fatal("the scheduler and controller manager never took their Leases")
		}
		time.Sleep(100 * time.Millisecond)
		held = 0
		for _, name := range controlPlaneLeases {
			l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), name, metav1.GetOptions{})
			if err == nil && heldByHost(l.Spec.HolderIdentity, host) {
				held++
			}
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("server after SIGTERM: %v", err)
	}
	stop, c = runServerCmd(t, dir, "--apiserver-only")
	defer func() { _ = stop() }()
	for _, name := range controlPlaneLeases {
		l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease %s: %v", name, err)
		}
		if h := l.Spec.HolderIdentity; h != nil && *h != "" {
			t.Errorf("lease %s still held by %q after the server stopped", name, *h)
		}
	}
}

func TestHeldByHost(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		holder *string
		want   bool
	}{
		{nil, false},
		{s(""), false},
		{s("vm_0123abcd"), true},
		{s("vm2_0123abcd"), false},
		{s("othervm_0123"), false},
	}
	for _, c := range cases {
		if got := heldByHost(c.holder, "vm"); got != c.want {
			t.Errorf("heldByHost(%v, vm) = %v, want %v", c.holder, got, c.want)
		}
	}
}

// `wasmkube up` advertises its real node's pod-bridge gateway unless told otherwise, and
// the listen address (no advertise address) without a real node.
func TestUpAdvertiseAddress(t *testing.T) {
	for _, c := range []struct {
		name     string
		o        upOptions
		realNode bool
		want     string
		wantErr  string
	}{
		{name: "real node, default CIDR", o: upOptions{podCIDR: "10.42.0.0/24"}, realNode: true, want: "10.42.0.1"},
		{name: "real node, own CIDR", o: upOptions{podCIDR: "10.77.0.0/24"}, realNode: true, want: "10.77.0.1"},
		{name: "no real node", o: upOptions{podCIDR: "10.42.0.0/24"}, want: ""},
		{name: "explicit", o: upOptions{podCIDR: "10.42.0.0/24", advertise: "192.0.2.7"}, realNode: true, want: "192.0.2.7"},
		{name: "bad explicit", o: upOptions{advertise: "node1"}, wantErr: "--advertise-address: advertise address \"node1\""},
		{name: "bad CIDR", o: upOptions{podCIDR: "10.42.0.0"}, realNode: true, wantErr: "--pod-cidr"},
	} {
		got, err := upAdvertiseAddress(c.o, c.realNode)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want one with %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
}
