package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// mountTmpfs mounts a tmpfs of size bytes for the test (it needs root, as the tests run).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// fill allocates a file in dir so that about leave bytes stay free (0: as full as it gets).
func fill(t *testing.T, dir, name string, leave int64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	size := st.Size()
	for chunk := int64(16 << 20); chunk >= 4096; {
		free := freeBytes(t, dir)
		if free-leave < chunk {
			chunk /= 2
			continue
		}
		if err := syscall.Fallocate(int(f.Fd()), 0, size, chunk); err != nil {
			chunk /= 2
			continue
		}
		size += chunk
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// A server whose data dir's disk fills stays up: writes are answered 507 naming the disk,
// reads and watches keep working, writes resume on their own when space is freed, and no
// acknowledged write is lost; it also restarts on a completely full disk (writes refused),
// and recovers there too.
func TestFullDiskRefusesWritesAndRecovers(t *testing.T) {
	// 384 MiB: etcd's two 64 MB WAL segments, 48 MiB kept free and 96 MiB as reserve.
	mnt := mountTmpfs(t, "384m")
	data := filepath.Join(mnt, "data")
	listen := freePort(t)
	srv := apiservertest.Start(t, apiservertest.WithDataDir(data), apiservertest.WithListen(listen))
	ctx := context.Background()
	var acked []string
	create := func(cs kubernetes.Interface, name string) error {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"k": strings.Repeat("x", 1000)}}, metav1.CreateOptions{})
		if err == nil {
			acked = append(acked, name)
		}
		return err
	}
	refused := func(cs kubernetes.Interface, name string) {
		t.Helper()
		err := create(cs, name)
		var se *apierrors.StatusError
		if !asStatus(err, &se) || se.ErrStatus.Code != http.StatusInsufficientStorage || !strings.Contains(se.ErrStatus.Message, "disk of") {
			t.Fatalf("create %s on a full disk: %v, want 507 naming the disk", name, err)
		}
	}
	recovers := func(cs kubernetes.Interface, name string) {
		t.Helper()
		var err error
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if err = create(cs, name); err == nil {
				return
			}
		}
		t.Fatalf("writes did not resume after space was freed: %v", err)
	}
	readsWork := func(cs kubernetes.Interface) {
		t.Helper()
		for _, name := range acked {
			if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Fatalf("get %s: %v", name, err)
			}
		}
		list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		w.Stop()
		w, err = cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("watch rv=0: %v", err)
		}
		if ev := <-w.ResultChan(); ev.Type != watch.Added {
			t.Fatalf("watch rv=0: first event %v", ev.Type)
		}
		w.Stop()
	}

	for i := range 5 {
		if err := create(srv.Client, fmt.Sprintf("before-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Nearly full: below the free space kept for etcd.
	fill(t, mnt, "filler", 32<<20)
	refused(srv.Client, "nearly-full")
	readsWork(srv.Client)
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	recovers(srv.Client, "after-nearly-full")

	reserve := filepath.Join(data, "etcd-space-reserve")
	// Filled to the last byte while etcd runs is not tested: etcd may write on its own in
	// the moment before the reserve is released (docs/storage.md, "What is not covered").

	// A restart on a full disk: it starts (the reserve is released before etcd starts,
	// and nothing unchanged is rewritten), serves reads and refuses writes, and resumes
	// writes once space is freed.
	srv.Stop()
	fill(t, mnt, "filler", 0)
	srv = apiservertest.Start(t, apiservertest.WithDataDir(data), apiservertest.WithListen(listen))
	readsWork(srv.Client)
	refused(srv.Client, "full-after-restart")
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	recovers(srv.Client, "after-restart")
	readsWork(srv.Client)
	waitFor(t, "the reserve restored after the restart", func() bool { _, err := os.Stat(reserve); return err == nil })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}

func asStatus(err error, se **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	if ok {
		*se = s
	}
	return ok
}
