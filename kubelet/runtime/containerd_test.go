package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/cni"
	"github.com/wasmkube/wasmkube/kubelet/images"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

func TestResolveArgs(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		ep, cmd, command, args, want []string
	}{
		{"image only", []string{"/ep"}, []string{"a"}, nil, nil, []string{"/ep", "a"}},
		{"args replace cmd", []string{"/ep"}, []string{"a"}, nil, []string{"b"}, []string{"/ep", "b"}},
		{"command replaces both", []string{"/ep"}, []string{"a"}, []string{"/c"}, nil, []string{"/c"}},
		{"command and args", []string{"/ep"}, []string{"a"}, []string{"/c"}, []string{"x"}, []string{"/c", "x"}},
	} {
		if got := runtime.ResolveArgs(tc.ep, tc.cmd, tc.command, tc.args); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v want %v", tc.name, got, tc.want)
		}
	}
}

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":               "docker.io/library/busybox:latest",
		images.BusyboxRef:       images.BusyboxRef,
		"127.0.0.1:5000/app:v1": "127.0.0.1:5000/app:v1",
	} {
		got, err := runtime.NormalizeImage(in)
		if err != nil || got != want {
			t.Errorf("NormalizeImage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := runtime.NormalizeImage("bad image!"); err == nil {
		t.Error("want an error for an invalid reference")
	}
}

func newRuntime(t *testing.T) (*runtime.Containerd, string, cni.Config) {
	t.Helper()
	d := nodetest.Containerd(t)
	nodetest.ImportImages(t, d, "node1")
	root := t.TempDir()
	ncfg := nodetest.Network(t, filepath.Join(root, "cni"))
	net, err := cni.New(ncfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, err := runtime.NewContainerd(ctx, runtime.ContainerdOptions{Address: d.Address(), Namespace: "node1", Snapshotter: d.Snapshotter(), RootDir: root, Network: net})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, root, ncfg
}

func waitState(t *testing.T, r runtime.Runtime, id string, want runtime.ContainerState) *runtime.ContainerStatus {
	t.Helper()
	for i := 0; i < 500; i++ {
		st, err := r.ContainerStatus(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == want {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("container %s never reached %s", id, want)
	return nil
}

func TestContainerdSandboxContainersNetworkAndCleanup(t *testing.T) {
	r, root, ncfg := newRuntime(t)
	ctx := context.Background()

	v, err := r.Version(ctx)
	if err != nil || !strings.HasPrefix(v, "containerd://") {
		t.Fatalf("version %q %v", v, err)
	}
	if img, err := r.ImageStatus(ctx, images.BusyboxRef); err != nil || img == nil {
		t.Fatalf("busybox image status: %v %v", img, err)
	}
	if img, err := r.ImageStatus(ctx, "wasmkube.local/absent:latest"); err != nil || img != nil {
		t.Fatalf("absent image: %v %v", img, err)
	}

	pod := runtime.PodRef{UID: "uid-a", Namespace: "default", Name: "a"}
	sa, err := r.RunPodSandbox(ctx, runtime.SandboxConfig{Pod: pod, Image: images.PauseRef})
	if err != nil {
		t.Fatal(err)
	}
	if sa.IP == "" || sa.State != runtime.SandboxReady {
		t.Fatalf("sandbox %+v", sa)
	}
	sbB, err := r.RunPodSandbox(ctx, runtime.SandboxConfig{Pod: runtime.PodRef{UID: "uid-b", Namespace: "default", Name: "b"}, Image: images.PauseRef})
	if err != nil {
		t.Fatal(err)
	}

	// A server in pod a, a client in pod b reaching it by pod IP over the bridge.
	vol := t.TempDir()
	logA := filepath.Join(root, "logs", "server.log")
	server, err := r.CreateContainer(ctx, sa.ID, runtime.ContainerConfig{
		Name: "server", Image: images.BusyboxRef, LogPath: logA,
		Command:   []string{"sh", "-c", "echo started; hostname > /data/hostname; trap 'echo bye; exit 3' TERM; while true; do echo hello | nc -l -p 8080; done & wait"},
		Mounts:    []runtime.Mount{{HostPath: vol, ContainerPath: "/data"}},
		Resources: runtime.Resources{MemoryLimitBytes: 64 << 20, CPUQuota: 50000, CPUPeriod: 100000, CPUShares: 512},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, server); err != nil {
		t.Fatal(err)
	}
	waitState(t, r, server, runtime.ContainerRunning)
	// The port is open once nc listens; exec probes it from inside the pod.
	for i := 0; ; i++ {
		res, err := r.ExecSync(ctx, server, []string{"sh", "-c", "netstat -ltn | grep -q :8080"}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode == 0 {
			break
		}
		if i > 200 {
			t.Fatal("server never listened")
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err := r.ExecSync(ctx, server, []string{"sh", "-c", "echo out; echo err >&2; exit 7"}, 5*time.Second)
	if err != nil || res.ExitCode != 7 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("exec: %+v %v", res, err)
	}
	// The runtime's failures are typed: a command past its timeout, a container that
	// does not exist.
	if _, err := r.ExecSync(ctx, server, []string{"sleep", "10"}, 200*time.Millisecond); !errors.Is(err, runtime.ErrTimeout) {
		t.Errorf("exec past its timeout: %v, want runtime.ErrTimeout", err)
	}
	if _, err := r.ExecSync(ctx, "no-such-container", []string{"true"}, time.Second); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("exec in a missing container: %v, want runtime.ErrNotFound", err)
	}

	client, err := r.CreateContainer(ctx, sbB.ID, runtime.ContainerConfig{
		Name: "client", Image: images.BusyboxRef, Attempt: 2, LogPath: filepath.Join(root, "logs", "client.log"),
		Command: []string{"sh", "-c", "nc " + sa.IP + " 8080 </dev/null"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, client); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, r, client, runtime.ContainerExited)
	if st.ExitCode != 0 || st.Name != "client" || st.Attempt != 2 || st.Pod.UID != "uid-b" || st.SandboxID != sbB.ID {
		t.Fatalf("client status %+v", st)
	}
	if out, _ := os.ReadFile(st.LogPath); !strings.Contains(string(out), "hello") {
		t.Fatalf("client log %q lacks the server's reply", out)
	}
	if h, _ := os.ReadFile(filepath.Join(vol, "hostname")); strings.TrimSpace(string(h)) != "a" {
		t.Fatalf("hostname in pod a = %q", h)
	}

	list, err := r.ListContainers(ctx, "")
	if err != nil || len(list) != 2 {
		t.Fatalf("list containers: %v %v", list, err)
	}
	sbs, err := r.ListSandboxes(ctx, "")
	if err != nil || len(sbs) != 2 {
		t.Fatalf("list sandboxes: %v %v", sbs, err)
	}
	if sbs, err := r.ListSandboxes(ctx, "uid-b"); err != nil || len(sbs) != 1 || sbs[0].ID != sbB.ID {
		t.Fatalf("list sandboxes of pod b: %v %v", sbs, err)
	}
	if cs, err := r.ListContainers(ctx, "uid-a"); err != nil || len(cs) != 1 || cs[0].ID != server {
		t.Fatalf("list containers of pod a: %v %v", cs, err)
	}

	// SIGTERM is honoured: the trap's exit code comes back.
	if err := r.StopContainer(ctx, server, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	st = waitState(t, r, server, runtime.ContainerExited)
	if st.ExitCode != 3 {
		t.Fatalf("server exit code %d, want 3 from its TERM trap", st.ExitCode)
	}
	if out, _ := os.ReadFile(logA); !strings.Contains(string(out), "started") || !strings.Contains(string(out), "bye") {
		t.Fatalf("server log %q", out)
	}

	for _, sb := range []string{sa.ID, sbB.ID} {
		if err := r.StopPodSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		if err := r.StopPodSandbox(ctx, sb); err != nil {
			t.Fatalf("second stop: %v", err)
		}
		if err := r.RemovePodSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	if list, _ := r.ListContainers(ctx, ""); len(list) != 0 {
		t.Fatalf("containers left: %v", list)
	}
	if sbs, _ := r.ListSandboxes(ctx, ""); len(sbs) != 0 {
		t.Fatalf("sandboxes left: %v", sbs)
	}
	if v := nodetest.Veths(t, ncfg.Bridge); len(v) != 0 {
		t.Fatalf("veths left on %s: %v", ncfg.Bridge, v)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "netns")); len(ents) != 0 {
		t.Fatalf("network namespaces left: %v", ents)
	}
	if m := nodetest.MountsUnder(t, root); len(m) != 0 {
		t.Fatalf("mounts left: %v", m)
	}
	ipam, _ := os.ReadDir(filepath.Join(root, "cni", "ipam", "wasmkube"))
	for _, e := range ipam {
		if strings.HasPrefix(e.Name(), "10.") {
			t.Fatalf("IP %s still allocated", e.Name())
		}
	}
}

func TestPullFromLoopbackRegistry(t *testing.T) {
	r, _, _ := newRuntime(t)
	ctx := context.Background()
	reg := httptest.NewServer(registry.New())
	defer reg.Close()
	img, err := images.BuildImage([]images.Entry{{Path: "hello", Mode: 0o644, Data: []byte("pulled over http\n")}}, nil, []string{"/bin/cat", "/hello"})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(reg.URL, "http://")
	ref := host + "/test/hello:v1"
	if err := pushImage(reg.URL, "test/hello", "v1", img); err != nil {
		t.Fatal(err)
	}
	if st, err := r.ImageStatus(ctx, ref); err != nil || st != nil {
		t.Fatalf("image present before the pull: %v %v", st, err)
	}
	digest, err := r.PullImage(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.ImageStatus(ctx, ref)
	if err != nil || st == nil || st.Digest != digest {
		t.Fatalf("image status after pull: %+v %v (digest %s)", st, err, digest)
	}
	if _, err := r.PullImage(ctx, host+"/test/absent:v1", nil); err == nil {
		t.Fatal("pulling a missing image succeeded")
	}
}

// pushImage uploads img to a registry with the plain distribution API (blob uploads, then
// the manifest), as `docker push` does.
func pushImage(base, repo, tag string, img v1.Image) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	type blob struct {
		digest string
		data   []byte
	}
	var blobs []blob
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		blobs = append(blobs, blob{d.String(), b})
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cd, err := img.ConfigName()
	if err != nil {
		return err
	}
	blobs = append(blobs, blob{cd.String(), cfg})
	for _, b := range blobs {
		resp, err := http.Post(base+"/v2/"+repo+"/blobs/uploads/", "", nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			return fmt.Errorf("upload %s: %s: %w", b.digest, resp.Status, err)
		}
		q := loc.Query()
		q.Set("digest", b.digest)
		loc.RawQuery = q.Encode()
		req, _ := http.NewRequest(http.MethodPut, loc.String(), bytes.NewReader(b.data))
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("upload %s: %s", b.digest, resp.Status)
		}
	}
	raw, err := img.RawManifest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodPut, base+"/v2/"+repo+"/manifests/"+tag, bytes.NewReader(raw))
	req.Header.Set("Content-Type", string(mt))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("put manifest: %s", resp.Status)
	}
	return nil
}

func TestSecurityContextAndHostNetwork(t *testing.T) {
	r, root, _ := newRuntime(t)
	ctx := context.Background()
	sb, err := r.RunPodSandbox(ctx, runtime.SandboxConfig{Pod: runtime.PodRef{UID: "uid-h", Namespace: "default", Name: "h"}, Image: images.PauseRef, HostNetwork: true, HostIP: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if sb.IP != "127.0.0.1" || sb.NetNSPath != "" {
		t.Fatalf("host-network sandbox %+v", sb)
	}
	uid, gid := int64(1000), int64(2000)
	logPath := filepath.Join(root, "logs", "sec.log")
	id, err := r.CreateContainer(ctx, sb.ID, runtime.ContainerConfig{
		Name: "sec", Image: images.BusyboxRef, LogPath: logPath,
		Command:  []string{"sh", "-c", "id -u; id -g; hostname; touch /written 2>/dev/null || echo read-only; grep CapEff /proc/self/status"},
		Security: runtime.Security{RunAsUser: &uid, RunAsGroup: &gid, ReadOnlyRootFS: true, DropCaps: []string{"ALL"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, r, id, runtime.ContainerExited)
	host, _ := os.Hostname()
	out := logContent(t, logPath)
	want := "1000\n2000\n" + host + "\nread-only\nCapEff:\t0000000000000000\n"
	if st.ExitCode != 0 || string(out) != want {
		t.Errorf("exit %d, output %q, want %q", st.ExitCode, out, want)
	}
	if err := r.RemovePodSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
}

// logContent is what a CRI log file says, without the records' times and streams.
func logContent(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		r, err := runtime.ParseLogRecord([]byte(strings.TrimSuffix(line, "\n")))
		if err != nil {
			t.Fatalf("log %s: %q is not a CRI record: %v", path, line, err)
		}
		b.Write(r.Content)
		if !r.Partial {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
