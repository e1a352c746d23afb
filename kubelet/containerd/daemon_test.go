package containerd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
)

func TestConfigPutsEverythingUnderDir(t *testing.T) {
	cfg := Config("/x/y")
	for _, want := range []string{`root = "/x/y/root"`, `state = "/x/y/state"`, `address = "/x/y/containerd.sock"`, `io.containerd.grpc.v1.cri`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
}

func TestStartAnswersAndStops(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test needs root to run containerd")
	}
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(d.Address())
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(context.Background())
	c.Close()
	if err != nil || v.Version == "" {
		t.Fatalf("version: %v %+v", err, v)
	}
	if d.Snapshotter() != SnapshotterOverlay && d.Snapshotter() != SnapshotterNative {
		t.Fatalf("snapshotter %q", d.Snapshotter())
	}

	// Killed behind its back, the daemon comes back on the same socket.
	if err := syscall.Kill(d.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; d.Restarts() == 0; i++ {
		if i > 500 {
			t.Fatal("containerd was not restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := 0; ; i++ {
		c, err := client.New(d.Address())
		if err == nil {
			_, err = c.Version(context.Background())
			c.Close()
		}
		if err == nil {
			break
		}
		if i > 500 {
			t.Fatalf("restarted containerd does not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	d.Stop()
	select {
	case <-d.Done():
	default:
		t.Fatal("daemon still running after Stop")
	}
}

// A daemon left running on the directory (its wasmkube was killed) is stopped, not fought.
func TestStartStopsALeftoverDaemon(t *testing.T) {
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(Config(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	leftover := exec.Command("containerd", "--config", cfg)
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- leftover.Wait() }()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "containerd.sock")); err == nil {
			break
		}
		if i > 500 {
			leftover.Process.Kill()
			t.Fatal("leftover daemon never listened")
		}
		time.Sleep(20 * time.Millisecond)
	}
	d, err := Start(context.Background(), dir)
	if err != nil {
		leftover.Process.Kill()
		t.Fatal(err)
	}
	defer d.Stop()
	select {
	case <-waited:
	case <-time.After(15 * time.Second):
		leftover.Process.Kill()
		t.Fatal("leftover daemon still running")
	}
	if d.Pid() == leftover.Process.Pid {
		t.Fatal("Start adopted the leftover instead of starting its own")
	}
}
