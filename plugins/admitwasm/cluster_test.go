package admitwasm_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// cluster is a real API server with wasm admission policies from a config file.
type cluster struct {
	t    testing.TB
	srv  *apiservertest.Server
	pol  *admitwasm.Policies
	reg  *prometheus.Registry
	dir  string
	file string
	logs *syncBuffer
}

// modules builds the test policies and returns the config text with every
// "@name@" replaced by the path of testdata/name.wat built.
func modules(t testing.TB, config string) string {
	t.Helper()
	for _, name := range []string{"require-team", "add-annotation", "second-mutator", "misbehave", "context", "broken"} {
		tag := "@" + name + "@"
		if strings.Contains(config, tag) {
			config = strings.ReplaceAll(config, tag, wasmbuild.WAT(t, "plugins/admitwasm/testdata/"+name+".wat"))
		}
	}
	return config
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startCluster starts an API server whose admission policies are config's.
func startCluster(t testing.TB, config string) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, dir: dir, file: filepath.Join(dir, "wasmkube.yaml"), reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	c.write(config)
	log := slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(dir, "wasm-cache"),
		Registerer: c.reg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.pol, err = admitwasm.New(ctx, admitwasm.Options{Host: h, ConfigFile: c.file, Registerer: c.reg, Logger: log})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c.srv = apiservertest.Start(t, apiservertest.WithAdmission(c.pol))
	done := make(chan struct{})
	go func() { c.pol.Run(ctx, c.srv.Client); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		c.srv.Stop()
		c.pol.Close(context.Background())
	})
	return c
}

// write replaces the config file (by rename, as editors do).
func (c *cluster) write(config string) {
	c.t.Helper()
	tmp := c.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(modules(c.t, config)), 0o600); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, c.file); err != nil {
		c.t.Fatal(err)
	}
}

// client is a clientset that records the server's warnings in *warnings.
func (c *cluster) client(warnings *[]string) kubernetes.Interface {
	cfg := rest.CopyConfig(c.srv.Config)
	var mu sync.Mutex
	cfg.WarningHandler = warningFunc(func(msg string) {
		mu.Lock()
		*warnings = append(*warnings, msg)
		mu.Unlock()
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

type warningFunc func(string)

func (f warningFunc) HandleWarningHeader(code int, _ string, msg string) {
	if code == 299 {
		f(msg)
	}
}

// metric returns the value of the series name{labels} (0 when absent).
func (c *cluster) metric(name string, labels map[string]string) float64 {
	c.t.Helper()
	mfs, err := c.reg.Gather()
	if err != nil {
		c.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// eventually polls cond every 20ms for up to 10s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// event waits for an Event with reason in namespace ns whose message contains text.
func (c *cluster) event(ns, reason, text string) {
	c.t.Helper()
	eventually(c.t, "event "+reason+" "+text, func() bool {
		evs, err := c.srv.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return true
			}
		}
		return false
	})
}

func (c *cluster) namespace(name string, labels map[string]string) {
	c.t.Helper()
	_, err := c.srv.Client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
}

func pod(name string, labels map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}
}

// kubectl runs the real kubectl against the cluster and returns its combined output.
func (c *cluster) kubectl(args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", c.srv.KubeconfigPath, "--cache-dir", filepath.Join(c.dir, "kcache")}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+c.dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *cluster) manifest(name, content string) string {
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}
