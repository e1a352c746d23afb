package runtime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	runcoptions "github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"golang.org/x/sys/unix"
)

// The OCI runtimes the runc v2 shim can drive (its BinaryName option): runc, the
// shim's default, and crun, a C implementation of the same command line. crun's
// `exec` costs a third of runc's here (docs/kubelet.md, "The OCI runtime"), so `auto`
// takes it when it is installed.
const (
	OCIRuntimeAuto = "auto"
	OCIRuntimeRunc = "runc"
	OCIRuntimeCrun = "crun"
)

// OCIWrapperDir is where ResolveOCIRuntime writes the crun wrapper a hybrid cgroup host
// needs: a tmpfs that lives as long as the containers whose shims run it (a kubelet's
// root dir may be removed while its containers' shims still call the wrapper).
const OCIWrapperDir = "/run/wasmkube"

// OCIRuntime is the OCI runtime a node's containers are created with.
type OCIRuntime struct {
	Name string // runc or crun
	// Binary is the shim's BinaryName: empty for runc (the shim's default), the crun
	// binary, or the wrapper that gives crun a legacy cgroup view (crunWrapper).
	Binary string
	// Note says why Binary is what it is, for the kubelet's start-up log.
	Note string
}

// shimOptions are the runc v2 shim's options for a new container: nil (the shim's
// defaults) for runc.
func (o OCIRuntime) shimOptions() any {
	if o.Binary == "" {
		return nil
	}
	return &runcoptions.Options{BinaryName: o.Binary}
}

// crunSpecVersion is the newest OCI runtime-spec version crun 1.8 accepts: it refuses a
// config.json of another ("unknown version specified"), and the spec package we build
// specs with says 1.3.0. Nothing of ours uses a field added after 1.1.
const crunSpecVersion = "1.1.0"

// specOpt adapts a new container's OCI spec to the runtime: for crun, the version it
// accepts.
func (o OCIRuntime) specOpt() oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if o.Name == OCIRuntimeCrun && !strings.HasPrefix(s.Version, "1.0.") && !strings.HasPrefix(s.Version, "1.1.") {
			s.Version = crunSpecVersion
		}
		return nil
	}
}

// ResolveOCIRuntime turns the kubelet's --oci-runtime value (runc, crun, auto; empty is
// runc, the default until TestWarmSandboxClaimedByPod's failures with crun are understood,
// docs/kubelet.md) into the runtime to use. dir is where the crun wrapper is written when the host
// needs it (see crunWrapper). A container keeps the runtime it was created with: the
// shim records it per container, so a kubelet restarted with another choice still
// execs into, stops and deletes the containers it adopts with their own runtime.
func ResolveOCIRuntime(name, dir string) (OCIRuntime, error) {
	switch name {
	case OCIRuntimeAuto:
		if _, err := exec.LookPath("crun"); err != nil {
			return OCIRuntime{Name: OCIRuntimeRunc, Note: "crun is not installed"}, nil
		}
		return orRunc(resolveCrun(dir))
	case "", OCIRuntimeRunc:
		if _, err := exec.LookPath("runc"); err != nil {
			return OCIRuntime{}, fmt.Errorf("--oci-runtime runc: runc is not in PATH (install it with `apt-get install runc`)")
		}
		return OCIRuntime{Name: OCIRuntimeRunc}, nil
	case OCIRuntimeCrun:
		if _, err := exec.LookPath("crun"); err != nil {
			return OCIRuntime{}, fmt.Errorf("--oci-runtime crun: crun is not in PATH (install it with `apt-get install crun`)")
		}
		return resolveCrun(dir)
	}
	return OCIRuntime{}, fmt.Errorf("--oci-runtime %q: must be auto, runc or crun", name)
}

// orRunc is auto's answer: crun when it can be used, else runc with the reason (a hybrid
// cgroup host whose wrapper cannot be written, say), as auto promises; `--oci-runtime
// crun` keeps the error instead.
func orRunc(crun OCIRuntime, err error) (OCIRuntime, error) {
	if err != nil {
		return OCIRuntime{Name: OCIRuntimeRunc, Note: "crun cannot be used here (" + err.Error() + "): using runc"}, nil
	}
	return crun, nil
}

func resolveCrun(dir string) (OCIRuntime, error) {
	bin, err := exec.LookPath("crun")
	if err != nil {
		return OCIRuntime{}, err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return OCIRuntime{}, err
	}
	if !hybridWithUnifiedControllers("/sys/fs/cgroup") {
		return OCIRuntime{Name: OCIRuntimeCrun, Binary: bin}, nil
	}
	w, err := writeCrunWrapper(dir, bin)
	if err != nil {
		return OCIRuntime{}, fmt.Errorf("crun on a hybrid cgroup host: %w", err)
	}
	return OCIRuntime{Name: OCIRuntimeCrun, Binary: w,
		Note: "hybrid cgroup host with controllers on the unified hierarchy: containers are created through " + w}, nil
}

// hybridWithUnifiedControllers tells whether root is a hybrid cgroup layout (v1
// controllers on a tmpfs, cgroup2 at root/unified) whose unified hierarchy holds a
// controller (hugetlb here, when it is not mounted as v1). crun (1.8) refuses to create
// a container there ("cgroups in hybrid mode not supported, drop all controllers from
// cgroupv2"); runc uses the v1 hierarchies.
func hybridWithUnifiedControllers(root string) bool {
	var st unix.Statfs_t
	if unix.Statfs(root, &st) != nil || st.Type != unix.TMPFS_MAGIC {
		return false
	}
	if unix.Statfs(filepath.Join(root, "unified"), &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return false
	}
	b, err := os.ReadFile(filepath.Join(root, "unified", "cgroup.controllers"))
	return err == nil && len(bytes.TrimSpace(b)) > 0
}

// crunWrapperScript runs crun's create (and run) in a mount namespace of its own in
// which the unified hierarchy is unmounted, so crun sees the host's v1 controllers only
// and creates the container's cgroups there, as runc does with them on such a host (the
// container's processes stay in the shim's unified cgroup, where no limit of ours
// applies). unshare's new namespace is private, so nothing leaks to the host; the
// container's own mount namespace is made from it, and its /sys/fs/cgroup is mounted
// by crun as on a v1 host. Every other command (exec, start, kill, delete, state) works
// on such a host and is passed straight to crun, one dash exec more.
const crunWrapperScript = `#!/bin/sh
# Written by the wasmkube kubelet (kubelet/runtime/ociruntime.go): crun refuses to create
# containers on a hybrid cgroup host whose unified hierarchy holds a controller.
for a in "$@"; do
	case "$a" in
	create|run) exec %[2]s --mount --propagation private /bin/sh -c '%[3]s -l /sys/fs/cgroup/unified && exec "$0" "$@"' %[1]s "$@" ;;
	exec|start|kill|delete|state|ps|pause|resume|update|features) break ;;
	esac
done
exec %[1]s "$@"
`

// writeCrunWrapper writes the wrapper for crun at bin into dir (replacing an older one
// atomically, since a running shim may execute it at any time) and returns its path.
func writeCrunWrapper(dir, bin string) (string, error) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return "", fmt.Errorf("unshare (util-linux) is needed to run crun here: %w", err)
	}
	umount, err := exec.LookPath("umount")
	if err != nil {
		return "", fmt.Errorf("umount is needed to run crun here: %w", err)
	}
	for _, p := range []string{bin, unshare, umount} {
		if strings.ContainsAny(p, " \t\n'\"\\$`") {
			return "", fmt.Errorf("%q: a path the wrapper script cannot quote", p)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "crun-v1-cgroups")
	want := fmt.Sprintf(crunWrapperScript, bin, unshare, umount)
	if have, err := os.ReadFile(path); err == nil && string(have) == want {
		return path, nil
	}
	// A temporary file of this call's own: kubelets starting at once (two nodes on one
	// machine) share dir, and a shared temporary name lost one of them its rename.
	f, err := os.CreateTemp(dir, "crun-v1-cgroups-*.tmp")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_, err = f.WriteString(want)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("write the crun wrapper %s: %w", path, err)
	}
	return path, nil
}
