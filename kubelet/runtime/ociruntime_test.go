package runtime

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	runcoptions "github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/pkg/oci"
)

func TestResolveOCIRuntimeRefusesUnknownNames(t *testing.T) {
	_, err := ResolveOCIRuntime("kata", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "--oci-runtime") || !strings.Contains(err.Error(), `"kata"`) {
		t.Fatalf("err = %v, want one naming --oci-runtime and the value", err)
	}
}

func TestResolveOCIRuntime(t *testing.T) {
	_, crunErr := exec.LookPath("crun")
	for _, name := range []string{"", "auto", "runc", "crun"} {
		rt, err := ResolveOCIRuntime(name, t.TempDir())
		if name == "crun" && crunErr != nil {
			if err == nil || !strings.Contains(err.Error(), "apt-get install crun") {
				t.Errorf("%q without crun: err = %v, want the install hint", name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		want := OCIRuntimeRunc
		if name == "crun" || (name == "auto" && crunErr == nil) {
			want = OCIRuntimeCrun
		}
		if rt.Name != want {
			t.Errorf("%q: runtime %s, want %s", name, rt.Name, want)
		}
		switch opts := rt.shimOptions().(type) {
		case nil:
			if want != OCIRuntimeRunc {
				t.Errorf("%q: no shim options for %s", name, rt.Name)
			}
		case *runcoptions.Options:
			if want == OCIRuntimeRunc || opts.BinaryName != rt.Binary || rt.Binary == "" {
				t.Errorf("%q: shim options %+v for %+v", name, opts, rt)
			}
		}
	}
}

func TestCrunSpecVersion(t *testing.T) {
	for _, tc := range []struct{ runtime, in, want string }{
		{OCIRuntimeCrun, "1.3.0", crunSpecVersion},
		{OCIRuntimeCrun, "1.2.1", crunSpecVersion},
		{OCIRuntimeCrun, "1.1.0", "1.1.0"},
		{OCIRuntimeCrun, "1.0.2-dev", "1.0.2-dev"},
		{OCIRuntimeRunc, "1.3.0", "1.3.0"},
	} {
		s := &oci.Spec{Version: tc.in}
		if err := (OCIRuntime{Name: tc.runtime}).specOpt()(context.Background(), nil, nil, s); err != nil {
			t.Fatal(err)
		}
		if s.Version != tc.want {
			t.Errorf("%s, spec %s: got %s, want %s", tc.runtime, tc.in, s.Version, tc.want)
		}
	}
}

// The wrapper hides the unified hierarchy from create and run only, and passes the
// arguments through untouched. A stand-in for crun reports what it was given and saw.
func TestCrunWrapper(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the wrapper makes a mount namespace")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake-crun")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nif grep -q ' /sys/fs/cgroup/unified ' /proc/self/mounts; then echo unified; else echo hidden; fi\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := writeCrunWrapper(filepath.Join(dir, "bin"), fake)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := writeCrunWrapper(filepath.Join(dir, "bin"), fake); err != nil || again != w {
		t.Fatalf("second write: %s, %v", again, err)
	}
	hostHasUnified := false
	if m, err := os.ReadFile("/proc/self/mounts"); err == nil {
		hostHasUnified = strings.Contains(string(m), " /sys/fs/cgroup/unified ")
	}
	for _, tc := range []struct {
		args   []string
		hidden bool
	}{
		{[]string{"--root", "/run/x", "--log", "/tmp/a b.json", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/p", "id1"}, true},
		{[]string{"--root", "/run/x", "run", "-d", "id2"}, true},
		{[]string{"--root", "/run/x", "exec", "--process", "/tmp/p.json", "--detach", "id1"}, false},
		{[]string{"--root", "/run/x", "delete", "--force", "create"}, false}, // a container named create
	} {
		out, err := exec.Command(w, tc.args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v: %s", tc.args, err, out)
		}
		lines := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)
		if len(lines) != 2 || lines[1] != strings.Join(tc.args, " ") {
			t.Errorf("%v: crun got %q", tc.args, out)
			continue
		}
		wantSeen := "hidden"
		if !tc.hidden && hostHasUnified {
			wantSeen = "unified"
		}
		if lines[0] != wantSeen {
			t.Errorf("%v: crun saw the unified hierarchy %s, want %s", tc.args, lines[0], wantSeen)
		}
	}
	if m, err := os.ReadFile("/proc/self/mounts"); err == nil && hostHasUnified && !strings.Contains(string(m), " /sys/fs/cgroup/unified ") {
		t.Fatal("the host lost its unified mount")
	}
}

// Kubelets starting at once (two nodes on one machine share OCIWrapperDir) all get the
// wrapper, complete, and leave no temporary file behind.
func TestCrunWrapperConcurrentWrites(t *testing.T) {
	for _, tool := range []string{"unshare", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	bin := "/usr/bin/crun"
	for round := range 20 {
		dir := t.TempDir()
		const n = 8
		errs := make(chan error, n)
		start := make(chan struct{})
		for range n {
			go func() {
				<-start
				_, err := writeCrunWrapper(dir, bin)
				errs <- err
			}()
		}
		close(start)
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: a concurrent write failed: %v", round, err)
			}
		}
		got, err := os.ReadFile(filepath.Join(dir, "crun-v1-cgroups"))
		if err != nil || !strings.HasSuffix(string(got), "exec "+bin+" \"$@\"\n") {
			t.Fatalf("round %d: wrapper %q (%v), want the whole script", round, got, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Fatalf("round %d: %d files in the wrapper dir, want only the wrapper", round, len(ents))
		}
	}
}

// TestAutoFallsBackToRunc: auto promises crun when it can be used, else runc; a crun that
// cannot be set up (its wrapper not written, say) makes auto use runc with the reason,
// while the error itself is what `--oci-runtime crun` reports.
func TestAutoFallsBackToRunc(t *testing.T) {
	crun := OCIRuntime{Name: OCIRuntimeCrun, Binary: "/usr/bin/crun"}
	if rt, err := orRunc(crun, nil); err != nil || rt != crun {
		t.Fatalf("usable crun: got %+v, %v; want crun itself", rt, err)
	}
	rt, err := orRunc(OCIRuntime{}, os.ErrPermission)
	if err != nil || rt.Name != OCIRuntimeRunc || rt.Binary != "" || !strings.Contains(rt.Note, os.ErrPermission.Error()) {
		t.Fatalf("unusable crun: got %+v, %v; want runc with a note naming the reason", rt, err)
	}
}
