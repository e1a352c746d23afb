package runtime_test

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/wasmkube/wasmkube/kubelet/cni"
	"github.com/wasmkube/wasmkube/kubelet/images"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// appRef is an image whose config differs from the runtime's default spec in every field
// oci.WithImageConfig sets: env, working directory, user, and (through its /etc/group) the
// user's supplementary groups. A replay that dropped any of them would show.
const appRef = "wasmkube.local/imagecache-app:v1"

var appEnv = []string{"PATH=/app/bin:/bin", "APP_MODE=test"}

// appArchive writes appRef as an OCI archive (images.BuildImage with a USER, a WORKDIR and
// an env of its own).
func appArchive(t *testing.T) []byte {
	t.Helper()
	img, err := images.BuildImage([]images.Entry{
		{Path: "app", Dir: true, Mode: 0o755},
		{Path: "etc", Dir: true, Mode: 0o755},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/app:/bin/sh\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\napp:x:1000:\nwheel:x:10:app\naudio:x:29:root,app\n")},
	}, []string{"/app/bin/serve"}, []string{"--port", "8080"})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Env, cf.Config.WorkingDir, cf.Config.User = appEnv, "/app", "1000"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := images.WriteArchive(&buf, appRef, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The runtime reads an image's config, layers and the process oci.WithImageConfig makes of
// it once per image digest, and replays that process for later containers of the image
// (imagecache.go). Containers created from the cache must get the spec they got without
// it; containers of another image must not get the first image's.
func TestImageConfigReplayedPerImage(t *testing.T) {
	d := nodetest.Containerd(t)
	nodetest.ImportImages(t, d, "node1")
	root := t.TempDir()
	net, err := cni.New(nodetest.Network(t, filepath.Join(root, "cni")))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, err := runtime.NewContainerd(rctx, runtime.ContainerdOptions{Address: d.Address(), Namespace: "node1", Snapshotter: d.Snapshotter(), RootDir: root, Network: net})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx := namespaces.WithNamespace(context.Background(), "node1")
	if _, err := images.Import(ctx, r.Client(), bytes.NewReader(appArchive(t)), d.Snapshotter()); err != nil {
		t.Fatal(err)
	}

	sb, err := r.RunPodSandbox(ctx, runtime.SandboxConfig{Pod: runtime.PodRef{UID: "uid-ic", Namespace: "default", Name: "ic"}, Image: images.PauseRef})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = r.StopPodSandbox(bg, sb.ID)
		_ = r.RemovePodSandbox(bg, sb.ID)
	})
	process := func(id string) *specs.Process {
		t.Helper()
		c, err := r.Client().LoadContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Spec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Process == nil {
			t.Fatalf("container %s: spec has no process", id)
		}
		return s.Process
	}
	create := func(cfg runtime.ContainerConfig) *specs.Process {
		t.Helper()
		id, err := r.CreateContainer(ctx, sb.ID, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return process(id)
	}
	type imageProcess struct {
		Env, Args      []string
		Cwd            string
		UID, GID       uint32
		AdditionalGids []uint32
	}
	of := func(p *specs.Process) imageProcess {
		gids := slices.Clone(p.User.AdditionalGids)
		slices.Sort(gids)
		return imageProcess{Env: p.Env, Args: p.Args, Cwd: p.Cwd, UID: p.User.UID, GID: p.User.GID, AdditionalGids: gids}
	}

	// The first container of the image computes the process; what it must be.
	first := of(create(runtime.ContainerConfig{Name: "one", Image: appRef}))
	want := imageProcess{
		Env: appEnv, Args: []string{"/app/bin/serve", "--port", "8080"}, Cwd: "/app",
		UID: 1000, GID: 1000, AdditionalGids: []uint32{10, 29, 1000},
	}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("first container of %s:\n got %+v\nwant %+v", appRef, first, want)
	}

	// The second is replayed from the cache: the same process, field by field.
	if second := of(create(runtime.ContainerConfig{Name: "two", Image: appRef})); !reflect.DeepEqual(second, first) {
		t.Errorf("second container (from the cache):\n got %+v\nwant %+v", second, first)
	}

	// The same command gives the same args, replayed or not.
	cmd := []string{"/app/bin/serve", "--once"}
	a := of(create(runtime.ContainerConfig{Name: "cmd-a", Image: appRef, Command: cmd}))
	b := of(create(runtime.ContainerConfig{Name: "cmd-b", Image: appRef, Command: cmd}))
	if !slices.Equal(a.Args, cmd) || !reflect.DeepEqual(a, b) {
		t.Errorf("same command, two containers:\n%+v\n%+v\nwant args %v", a, b, cmd)
	}

	// The pod's env is appended to the image's, whose PATH stays; a pod that overrides
	// PATH changes only its own container, not what the cache replays to the next one.
	extra := of(create(runtime.ContainerConfig{Name: "extra", Image: appRef, Env: []string{"EXTRA=1"}}))
	if wantEnv := append(slices.Clone(appEnv), "EXTRA=1"); !slices.Equal(extra.Env, wantEnv) {
		t.Errorf("env with EXTRA=1: %v, want %v", extra.Env, wantEnv)
	}
	override := of(create(runtime.ContainerConfig{Name: "override", Image: appRef, Env: []string{"PATH=/elsewhere", "APP_MODE=prod"}}))
	if wantEnv := []string{"PATH=/elsewhere", "APP_MODE=prod"}; !slices.Equal(override.Env, wantEnv) {
		t.Errorf("env overriding the image's: %v, want %v", override.Env, wantEnv)
	}
	if after := of(create(runtime.ContainerConfig{Name: "after", Image: appRef})); !reflect.DeepEqual(after, first) {
		t.Errorf("container after the overrides:\n got %+v\nwant %+v", after, first)
	}

	// Another image gets its own process, not the first image's: busybox (no USER, no
	// WORKDIR, cmd sh), and the sandbox's pause. busybox's first container sets its own
	// user, directory and env; what the cache keeps for the next is the image's alone.
	bbPath := "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	uid, gid := int64(4321), int64(4322)
	bb1 := of(create(runtime.ContainerConfig{Name: "bb1", Image: images.BusyboxRef, WorkingDir: "/tmp",
		Env: []string{"X=1"}, Security: runtime.Security{RunAsUser: &uid, RunAsGroup: &gid}}))
	if bb1.Cwd != "/tmp" || bb1.UID != 4321 || bb1.GID != 4322 || !slices.Equal(bb1.Env, []string{bbPath, "X=1"}) || !slices.Equal(bb1.Args, []string{"sh"}) {
		t.Errorf("busybox container with its own user, directory and env: %+v", bb1)
	}
	bbWant := imageProcess{Env: []string{bbPath}, Args: []string{"sh"}, Cwd: "/", UID: 0, GID: 0, AdditionalGids: []uint32{0}}
	if got := of(create(runtime.ContainerConfig{Name: "bb2", Image: images.BusyboxRef})); !reflect.DeepEqual(got, bbWant) {
		t.Errorf("busybox container from the cache:\n got %+v\nwant %+v", got, bbWant)
	}
	pause := of(process(sb.ID))
	if !slices.Equal(pause.Args, []string{"/pause"}) || pause.Cwd != "/" || pause.UID != 0 || slices.Contains(pause.Env, "APP_MODE=test") {
		t.Errorf("pause sandbox process %+v: not the pause image's own", pause)
	}
	// A second sandbox replays pause's process from the cache.
	sb2, err := r.RunPodSandbox(ctx, runtime.SandboxConfig{Pod: runtime.PodRef{UID: "uid-ic2", Namespace: "default", Name: "ic2"}, Image: images.PauseRef})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = r.StopPodSandbox(bg, sb2.ID)
		_ = r.RemovePodSandbox(bg, sb2.ID)
	})
	if pause2 := of(process(sb2.ID)); !reflect.DeepEqual(pause2, pause) {
		t.Errorf("second sandbox (pause from the cache):\n got %+v\nwant %+v", pause2, pause)
	}

}
