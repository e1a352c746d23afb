package main

import (
	"context"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vishvananda/netns"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/controller/nodeipam"
)

// upNodeName is the first real node's name: --node-name, else the host name.
func upNodeName(o upOptions) string {
	if o.nodeName != "" {
		return o.nodeName
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "wasmkube"
	}
	return strings.ToLower(h)
}

// firstNodeSubnet is the subnet node IPAM gives first: what the single node of `up` claims.
func firstNodeSubnet(cs controllerSettings) (string, error) {
	a, err := nodeipam.NewAllocator(cs.clusterCIDR, cs.nodeCIDRMaskSize)
	if err != nil {
		return "", err
	}
	p, err := a.Allocate("first")
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

// upVXLANID is the VNI of an up cluster, derived from its host bridge: its first node's
// VXLAN device lives in this machine's network namespace, which holds one device per VNI,
// so two ups (each with its own --host-bridge) need VNIs of their own.
func upVXLANID(hostBridge string) int {
	return 2 + int(crc32.ChecksumIEEE([]byte(hostBridge))%(1<<24-2))
}

// waitForNode waits (up to a minute) until the named Node exists.
func waitForNode(ctx context.Context, srv *apiserver.Server, name string, log *slog.Logger) {
	client, err := kubernetes.NewForConfig(srv.AdminRESTConfig())
	if err != nil {
		return
	}
	deadline := time.Now().Add(time.Minute)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		_, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil || !apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Warn("the real node has not registered within a minute; starting the hollow nodes anyway", "node", name)
}

// hostKubelets are the kubelets of up's other hosts: `wasmkube kubelet` child processes,
// each started in its host's network namespace (startInNetNS: a goroutine cannot move the
// whole Go process into a namespace), joined through the join token like a kubelet on
// another machine.
type hostKubelets struct {
	exe      string
	keepPods bool
	hosts    []*hostKubelet
}

// hostKubelet is one host's kubelet process.
type hostKubelet struct {
	name, netns, root string
	cmd               *exec.Cmd
	done              chan struct{} // closed once the process has exited; then err is its exit
	err               error
}

// startHostKubelets starts a kubelet in each of hosts' namespaces: node <name>-<i> at
// addrs[i-1], its root dir (containerd, pods, CNI state, log) under
// <data-dir>/nodes/<name>-<i>.
func startHostKubelets(srv *apiserver.Server, dataDir string, o upOptions, hosts *hostNetwork, addrs []netip.Addr, log *slog.Logger) (*hostKubelets, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the other hosts' kubelets run this binary: %w", err)
	}
	u, err := url.Parse(srv.URL())
	if err != nil {
		return nil, err
	}
	server := "https://" + addrs[0].String() + ":" + u.Port()
	images := o.imagesDir
	if images == "" {
		images = filepath.Join(filepath.Dir(exe), "images")
	}
	hk := &hostKubelets{exe: exe, keepPods: o.keepPods}
	for i, ns := range hosts.hosts {
		name := fmt.Sprintf("%s-%d", upNodeName(o), i+2)
		ip := addrs[i+1].String()
		root := filepath.Join(dataDir, "nodes", name)
		if err := os.MkdirAll(root, 0o700); err != nil {
			return hk, err
		}
		args := []string{"kubelet",
			"--server", server, "--token", srv.JoinToken(), "--node-name", name, "--node-ip", ip,
			"--root-dir", root, "--listen", ip + ":10250", "--network-backend", o.networkBackend, "--cluster-cidr", o.clusterCIDR,
			"--vxlan-id", strconv.Itoa(upVXLANID(o.hostBridge)),
			"--images-dir", images, "--oci-runtime", o.ociRuntime, "--warm-sandboxes", strconv.Itoa(o.warm),
			"--log-level", o.logLevel}
		if !o.keepPods {
			args = append(args, "--cleanup-on-exit")
		}
		if o.configFile != "" {
			args = append(args, "--config", o.configFile)
		}
		for _, r := range o.insecureRegistries {
			args = append(args, "--insecure-registry", r)
		}
		h := &hostKubelet{name: name, netns: ns, root: root, done: make(chan struct{})}
		logFile, err := h.start(exe, args)
		if err != nil {
			return hk, fmt.Errorf("start the kubelet of host %s: %w", ns, err)
		}
		go func() {
			h.err = h.cmd.Wait()
			logFile.Close()
			if h.err != nil {
				log.Warn("a host's kubelet exited", "node", name, "err", h.err, "log", logFile.Name())
			}
			close(h.done)
		}()
		hk.hosts = append(hk.hosts, h)
		log.Info("host", "node", name, "netns", ns, "ip", ip, "log", logFile.Name())
	}
	return hk, nil
}

// start runs `exe args...` in the host's network namespace, its output appended to the
// host's kubelet.log.
func (h *hostKubelet) start(exe string, args []string) (*os.File, error) {
	logFile, err := os.OpenFile(filepath.Join(h.root, "kubelet.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a Ctrl-C at the terminal reaches up, which stops the
	// kubelets in order, not all at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startInNetNS(cmd, h.netns); err != nil {
		logFile.Close()
		return nil, err
	}
	h.cmd = cmd
	return logFile, nil
}

// stop sends each kubelet SIGTERM (it removes its pods and routes, then its containerd)
// and waits for all of them, killing those still running after grace. A kubelet that did
// not end cleanly (killed with SIGKILL before, crashed, or killed here) could not remove
// its pods: its host gets a clean-up pass (cleanupDead).
func (hk *hostKubelets) stop(grace time.Duration, log *slog.Logger) {
	for _, h := range hk.hosts {
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	late := false
	for _, h := range hk.hosts {
		if !late {
			select {
			case <-h.done:
				continue
			case <-deadline.C:
				late = true
			}
		}
		select {
		case <-h.done:
		default:
			log.Error("a host's kubelet did not stop in time; killing it", "node", h.name, "pid", h.cmd.Process.Pid)
			_ = h.cmd.Process.Kill()
			<-h.done
		}
	}
	if hk.keepPods {
		return
	}
	for _, h := range hk.hosts {
		if h.err != nil {
			hk.cleanupDead(h, grace, log)
		}
	}
}

// cleanupDead runs `wasmkube kubelet --cleanup-only` for a host whose kubelet is gone: in
// its network namespace, on its root dir, it starts the host's containerd again (which
// finds the pods' shims still running), removes every pod through it as the kubelet's own
// exit does, and stops containerd (unmounting its state). docs/multihost.md says why this,
// and not killing the shims and unmounting by hand.
func (hk *hostKubelets) cleanupDead(h *hostKubelet, grace time.Duration, log *slog.Logger) {
	log.Info("cleaning up after a host's dead kubelet", "node", h.name, "log", filepath.Join(h.root, "kubelet.log"))
	logFile, err := h.start(hk.exe, []string{"kubelet", "--cleanup-only", "--node-name", h.name, "--root-dir", h.root})
	if err != nil {
		log.Error("clean up after a host's dead kubelet: its pods, shims and mounts stay", "node", h.name, "err", err)
		return
	}
	defer logFile.Close()
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(grace):
		_ = h.cmd.Process.Kill()
		err = fmt.Errorf("not done within %s: %w", grace, <-done)
	}
	if err != nil {
		log.Error("clean up after a host's dead kubelet: some of its pods, shims or mounts may stay", "node", h.name, "err", err, "log", logFile.Name())
	}
}

// startInNetNS starts cmd in the named network namespace: from a thread that joined it
// (the child inherits the thread's namespaces), which stays locked and is retired with its
// goroutine. Unlike `ip netns exec` it keeps the host's mounts: that remounts /sys, which
// hides the cgroup mounts runc needs.
func startInNetNS(cmd *exec.Cmd, name string) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		ns, err := netns.GetFromName(name)
		if err != nil {
			errc <- fmt.Errorf("network namespace %s: %w", name, err)
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("enter network namespace %s: %w", name, err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
