// Package cni wires pod network namespaces to a node-local bridge through libcni and the
// standard plugins (bridge, host-local, loopback). It implements runtime.Network.
package cni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// Defaults for a single-node cluster. 10.42.0.0/24 follows k3s' per-node /24 out of
// 10.42.0.0/16, and stays clear of podman/containerd-CRI's 10.88.0.0/16 on the same host.
const (
	DefaultBridge  = "wasmkube0"
	DefaultPodCIDR = "10.42.0.0/24"
	DefaultBinDir  = "/usr/lib/cni"
	networkName    = "wasmkube"
	ifName         = "eth0"
)

// Config describes a node's pod network.
type Config struct {
	Bridge  string // Linux bridge name (at most 15 bytes)
	PodCIDR string // this node's pod subnet; empty: set later with Network.SetPodCIDR
	BinDir  string // CNI plugin binaries
	Dir     string // conflist, IPAM state and libcni's result cache live under here
	IPMasq  bool   // masquerade traffic leaving the node (off: nothing leaves the machine)
	MTU     int    // of the bridge and the pods' interfaces; 0: the plugin's (1500)
}

// ConfList renders the CNI network list: bridge with host-local IPAM and hairpin (a pod can
// reach itself through a Service-like path), then loopback for the pod's lo.
func ConfList(cfg Config) ([]byte, error) {
	if len(cfg.Bridge) == 0 || len(cfg.Bridge) > 15 {
		return nil, fmt.Errorf("cni: bridge name %q must be 1-15 bytes", cfg.Bridge)
	}
	_, ipnet, err := net.ParseCIDR(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("cni: podCIDR %q: %w", cfg.PodCIDR, err)
	}
	if ones, bits := ipnet.Mask.Size(); bits-ones < 2 {
		return nil, fmt.Errorf("cni: podCIDR %q is too small for pods", cfg.PodCIDR)
	}
	bridge := map[string]any{
		"type":        "bridge",
		"bridge":      cfg.Bridge,
		"isGateway":   true,
		"ipMasq":      cfg.IPMasq,
		"hairpinMode": true,
		"ipam": map[string]any{
			"type":    "host-local",
			"ranges":  [][]map[string]string{{{"subnet": ipnet.String()}}},
			"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
			"dataDir": filepath.Join(cfg.Dir, "ipam"),
		},
	}
	if cfg.MTU > 0 {
		bridge["mtu"] = cfg.MTU
	}
	list := map[string]any{
		"cniVersion": "1.0.0",
		"name":       networkName,
		"plugins": []any{
			bridge,
			map[string]any{"type": "loopback"},
		},
	}
	return json.MarshalIndent(list, "", "  ")
}

// Network is a runtime.Network on libcni.
type Network struct {
	bridge string
	cfg    Config
	cni    *libcni.CNIConfig

	listMu sync.RWMutex
	list   *libcni.NetworkConfigList // nil until the pod subnet is known
	// host-local serialises its allocations with a file lock, but two bridge plugins
	// creating the bridge at once race; so ADDs run one at a time until one succeeded.
	mu    sync.Mutex
	ready bool
}

// New prepares libcni and, when cfg has the pod subnet, writes the conflist to
// cfg.Dir/net.d; without one, pods cannot be wired until SetPodCIDR (a kubelet waiting
// for its Node's spec.podCIDR).
func New(cfg Config) (*Network, error) {
	if cfg.Bridge == "" {
		cfg.Bridge = DefaultBridge
	}
	if cfg.BinDir == "" {
		cfg.BinDir = DefaultBinDir
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, p)); err != nil {
			return nil, fmt.Errorf("cni: plugin %s missing in %s (apt-get install containernetworking-plugins)", p, cfg.BinDir)
		}
	}
	n := &Network{bridge: cfg.Bridge, cfg: cfg, cni: libcni.NewCNIConfigWithCacheDir([]string{cfg.BinDir}, filepath.Join(cfg.Dir, "cache"), nil)}
	if cfg.PodCIDR != "" {
		if err := n.SetPodCIDR(cfg.PodCIDR); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// SetPodCIDR writes the conflist for the node's pod subnet; pods are wired from then on.
func (n *Network) SetPodCIDR(podCIDR string) error {
	cfg := n.cfg
	cfg.PodCIDR = podCIDR
	data, err := ConfList(cfg)
	if err != nil {
		return err
	}
	confDir := filepath.Join(cfg.Dir, "net.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return fmt.Errorf("cni: %w", err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-wasmkube.conflist"), data, 0o644); err != nil {
		return fmt.Errorf("cni: %w", err)
	}
	list, err := libcni.ConfListFromBytes(data)
	if err != nil {
		return fmt.Errorf("cni: parse conflist: %w", err)
	}
	n.listMu.Lock()
	n.list, n.cfg = list, cfg
	n.listMu.Unlock()
	return nil
}

// LoadSaved takes the conflist a previous kubelet wrote under cfg.Dir (its pod subnet
// included): what a clean-up of that kubelet's pods needs to release their addresses (CNI
// DEL) without the API. No conflist: false (that kubelet never wired a pod).
func (n *Network) LoadSaved() (bool, error) {
	data, err := os.ReadFile(filepath.Join(n.cfg.Dir, "net.d", "10-wasmkube.conflist"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cni: %w", err)
	}
	list, err := libcni.ConfListFromBytes(data)
	if err != nil {
		return false, fmt.Errorf("cni: parse conflist: %w", err)
	}
	n.listMu.Lock()
	n.list = list
	n.listMu.Unlock()
	return true, nil
}

// ErrNoPodCIDR: a pod was to be wired before the node's pod subnet is known.
var ErrNoPodCIDR = errors.New("cni: the node's pod subnet is not known yet (waiting for the Node's spec.podCIDR)")

func (n *Network) netList() (*libcni.NetworkConfigList, error) {
	n.listMu.RLock()
	defer n.listMu.RUnlock()
	if n.list == nil {
		return nil, ErrNoPodCIDR
	}
	return n.list, nil
}

func rtConf(id, netns string, pod runtime.PodRef) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID: id,
		NetNS:       netns,
		IfName:      ifName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.Namespace},
			{"K8S_POD_NAME", pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", id},
			{"K8S_POD_UID", pod.UID},
		},
	}
}

// Setup implements runtime.Network.
func (n *Network) Setup(ctx context.Context, id, netns string, pod runtime.PodRef) (string, error) {
	list, err := n.netList()
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	if n.ready {
		n.mu.Unlock()
	} else {
		defer n.mu.Unlock()
	}
	res, err := n.cni.AddNetworkList(ctx, list, rtConf(id, netns, pod))
	if err == nil && !n.ready {
		n.ready = true
	}
	if err != nil {
		return "", fmt.Errorf("cni add for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return "", fmt.Errorf("cni add for pod %s/%s: result: %w", pod.Namespace, pod.Name, err)
	}
	for _, ip := range r.IPs {
		if ip.Address.IP.To4() != nil {
			return ip.Address.IP.String(), nil
		}
	}
	if len(r.IPs) > 0 {
		return r.IPs[0].Address.IP.String(), nil
	}
	return "", fmt.Errorf("cni add for pod %s/%s: no IP in result", pod.Namespace, pod.Name)
}

// Teardown implements runtime.Network. A namespace that is already gone still gets its IP
// released: the plugins treat a missing netns on DEL as nothing to undo there.
func (n *Network) Teardown(ctx context.Context, id, netns string, pod runtime.PodRef) error {
	list, err := n.netList()
	if err != nil {
		return err
	}
	if _, err := os.Stat(netns); err != nil {
		netns = ""
	}
	if err := n.cni.DelNetworkList(ctx, list, rtConf(id, netns, pod)); err != nil {
		return fmt.Errorf("cni del for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

var _ runtime.Network = (*Network)(nil)

// RemoveBridge deletes the node's bridge once no pod is attached to it (on a clean
// shutdown); a missing bridge is not an error.
func (n *Network) RemoveBridge() error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", n.bridge)); err != nil {
		return nil
	}
	members, _ := os.ReadDir(filepath.Join("/sys/class/net", n.bridge, "brif"))
	if len(members) > 0 {
		return fmt.Errorf("cni: bridge %s still has %d interfaces attached", n.bridge, len(members))
	}
	if out, err := exec.Command("ip", "link", "del", n.bridge).CombinedOutput(); err != nil {
		return fmt.Errorf("cni: delete bridge %s: %v: %s", n.bridge, err, out)
	}
	return nil
}
