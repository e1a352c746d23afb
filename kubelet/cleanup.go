package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/wasmkube/wasmkube/kubelet/cni"
	"github.com/wasmkube/wasmkube/kubelet/netpol"
	"github.com/wasmkube/wasmkube/kubelet/overlay"
	"github.com/wasmkube/wasmkube/kubelet/proxy"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// CleanupOptions name what a kubelet that can no longer clean up after itself (killed
// with SIGKILL, crashed) left on its host: the same root dir, containerd, namespace and
// bridge it ran with.
type CleanupOptions struct {
	NodeName            string
	RootDir             string
	ContainerdAddress   string // a containerd on the dead kubelet's state (kubelet/containerd.Start on its root dir)
	ContainerdNamespace string // default: the node name
	Snapshotter         string
	Bridge              string // default cni.DefaultBridge
	CNIBinDir           string
	Logger              *slog.Logger
}

// LeftoverError says what a clean-up could not remove.
type LeftoverError struct {
	Node                  string
	Sandboxes, Containers int
}

func (e *LeftoverError) Error() string {
	return fmt.Sprintf("node %s: %d sandboxes and %d containers are left after the clean-up", e.Node, e.Sandboxes, e.Containers)
}

// Cleanup is a kubelet's exit clean-up (CleanupOnExit) for a kubelet that is gone: it
// removes every pod sandbox and container of the node (containerd stops their tasks and
// shims, unmounts their root filesystems; CNI DEL releases their addresses; their network
// namespaces and pod directories are unmounted and removed), the warm sandboxes, the pod
// bridge and the kubelet's nftables tables (proxy, NetworkPolicy, masquerade). It needs no
// API server: what runs on the node is what containerd knows, and the pod subnet is the
// one in the CNI config the kubelet saved. Run it in the dead kubelet's network namespace.
func Cleanup(ctx context.Context, opts CleanupOptions) error {
	if opts.NodeName == "" || opts.RootDir == "" || opts.ContainerdAddress == "" {
		return errors.New("kubelet clean-up: NodeName, RootDir and ContainerdAddress are required")
	}
	if opts.ContainerdNamespace == "" {
		opts.ContainerdNamespace = opts.NodeName
	}
	if opts.Bridge == "" {
		opts.Bridge = cni.DefaultBridge
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	root, err := filepath.Abs(opts.RootDir)
	if err != nil {
		return err
	}
	net, err := cni.New(cni.Config{Bridge: opts.Bridge, BinDir: opts.CNIBinDir, Dir: filepath.Join(root, "cni")})
	if err != nil {
		return err
	}
	if _, err := net.LoadSaved(); err != nil {
		return err
	}
	c, err := runtime.NewContainerd(ctx, runtime.ContainerdOptions{Address: opts.ContainerdAddress, Namespace: opts.ContainerdNamespace,
		Snapshotter: opts.Snapshotter, RootDir: filepath.Join(root, "runtime"), Network: net, Logger: opts.Logger})
	if err != nil {
		return err
	}
	defer c.Close()
	// The same steps as a kubelet's own exit clean-up, on a Kubelet that has only the
	// runtime: one way to remove a node's pods.
	k := &Kubelet{opts: Options{NodeName: opts.NodeName, RootDir: root, Bridge: opts.Bridge},
		log: opts.Logger.With("component", "kubelet-cleanup", "node", opts.NodeName), rt: c, ctrd: c, net: net}
	k.cleanupAll()
	var errs []error
	for _, table := range []struct {
		name   string
		remove func(string) error
	}{
		{k.ProxyTable(), proxy.RemoveTable},
		{netpol.TableName(root), netpol.RemoveTable},
		{k.masqTable(), overlay.RemoveMasquerade},
	} {
		if err := table.remove(table.name); err != nil {
			errs = append(errs, err)
		}
	}
	sbs, err := c.ListSandboxes(ctx, "")
	if err != nil {
		return err
	}
	cs, err := c.ListContainers(ctx, "")
	if err != nil {
		return err
	}
	if len(sbs)+len(cs) > 0 {
		errs = append(errs, &LeftoverError{Node: opts.NodeName, Sandboxes: len(sbs), Containers: len(cs)})
	}
	return errors.Join(errs...)
}
