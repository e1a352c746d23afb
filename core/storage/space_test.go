package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
)

func TestPlanSpace(t *testing.T) {
	const minFree, releaseAt, reserve = 100, 30, 50
	cases := []struct {
		name        string
		free        int64
		haveReserve bool
		want        spacePlan
	}{
		{"plenty, reserve kept", 500, true, spacePlan{}},
		{"plenty, reserve restored", 180, false, spacePlan{restoreReserve: true}},
		{"not enough to restore it without flapping", 179, false, spacePlan{}},
		{"below the minimum: writes refused", 99, true, spacePlan{refuseWrites: true}},
		{"nearly full: reserve released, deletes refused too", 29, true, spacePlan{refuseWrites: true, refuseDeletes: true, releaseReserve: true}},
		{"full without a reserve", 0, false, spacePlan{refuseWrites: true, refuseDeletes: true}},
		{"reserve released: its room is not for writes", 120, false, spacePlan{refuseWrites: true}},
		{"reserve released, room for it and writes", 150, false, spacePlan{}},
	}
	for _, c := range cases {
		if got := planSpace(c.free, minFree, releaseAt, reserve, c.haveReserve); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// etcd's backend quota: past it etcd raises its NOSPACE alarm and refuses puts; the store
// answers ErrNoSpace naming the alarm, reads and deletes still work, and once the objects
// are deleted the Backend compacts, defragments and disarms the alarm on its own, and
// writes resume. Nothing acknowledged is lost.
func TestNoSpaceAlarmRefusesWritesAndClears(t *testing.T) {
	b := embeddedFactory(t, Config{QuotaBackendBytes: 16 << 20})
	s := podStore(b)
	ctx := context.Background()
	big := strings.Repeat("x", 512<<10)
	var acked []string
	var err error
	for i := 0; i < 200; i++ {
		p := newPod("default", fmt.Sprintf("p%d", i), nil)
		p.Annotations = map[string]string{"big": big}
		if _, err = s.Create(ctx, Key("pods", "default", p.Name), p); err != nil {
			break
		}
		acked = append(acked, p.Name)
	}
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "NOSPACE") {
		t.Fatalf("after %d creates: %v, want ErrNoSpace naming the NOSPACE alarm", len(acked), err)
	}
	for _, name := range acked {
		if _, err := s.Get(ctx, Key("pods", "default", name)); err != nil {
			t.Fatalf("read %s under the alarm: %v", name, err)
		}
	}
	keep := acked[0]
	for _, name := range acked[1:] {
		if _, err := s.Delete(ctx, Key("pods", "default", name), nil); err != nil {
			t.Fatalf("delete %s under the alarm: %v", name, err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		p := newPod("default", "after", nil)
		if _, err = s.Create(ctx, Key("pods", "default", p.Name), p); err == nil {
			break
		}
		if !errors.Is(err, ErrNoSpace) || time.Now().After(deadline) {
			t.Fatalf("writes did not resume after the objects were deleted: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got, err := s.Get(ctx, Key("pods", "default", keep)); err != nil || got.(*corev1.Pod).Annotations["big"] != big {
		t.Fatalf("acknowledged %s after the alarm: %v", keep, err)
	}
}

// TestRestartAfterEtcdFatal: once the embedded etcd has given up on a write (its logger's
// fatal path, as on a failed database commit), writes are refused with a 503 saying the
// server restarts itself, and the Backend asks for that restart only when the disk has
// room again: not while it is full to the last byte.
func TestRestartAfterEtcdFatal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	// 384 MiB: etcd's two 64 MB WAL segments, 48 MiB kept free and 96 MiB as reserve.
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=384m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	restarts := make(chan string, 4)
	b := embeddedFactory(t, Config{DataDir: filepath.Join(mnt, "data"), RestartProcess: func(reason string) { restarts <- reason }})
	s := podStore(b)
	ctx := context.Background()
	mustCreate(t, s, newPod("default", "before", nil))

	// Fill the disk to the last byte, then let etcd's logger take the fatal path as etcd
	// does on a failed commit (it ends the goroutine that logs it).
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	var size int64
	for chunk := int64(16 << 20); chunk >= 4096; {
		if err := syscall.Fallocate(int(filler.Fd()), 0, size, chunk); err != nil {
			chunk /= 2
			continue
		}
		size += chunk
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.etcd.GetLogger().Fatal("failed to commit tx", zap.Error(syscall.ENOSPC))
	}()
	<-done
	_, err = s.Create(ctx, Key("pods", "default", "during"), newPod("default", "during", nil))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "failed to commit tx") || !strings.Contains(err.Error(), "restarts itself") {
		t.Fatalf("write after etcd's fatal error: %v, want ErrUnavailable naming it and the restart", err)
	}
	if _, err := s.(CachedGetter).GetCached(ctx, Key("pods", "default", "before"), "0"); err != nil {
		t.Fatalf("cached read after etcd's fatal error: %v", err)
	}
	// Four looks of the space monitor on a full disk: no restart, which would only fail
	// to start etcd again.
	select {
	case r := <-restarts:
		t.Fatalf("restart asked while the disk is full: %s", r)
	case <-time.After(4 * spaceCheckInterval):
	}
	filler.Close() // its blocks are freed when the last descriptor goes
	if err := os.Remove(filler.Name()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-restarts:
		if !strings.Contains(r, "failed to commit tx") {
			t.Errorf("restart reason %q does not name etcd's error", r)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no restart asked within a minute of the disk having room")
	}
	select {
	case r := <-restarts:
		t.Fatalf("restart asked twice: %s", r)
	case <-time.After(2 * spaceCheckInterval):
	}
}
