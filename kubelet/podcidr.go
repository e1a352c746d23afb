package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/kubelet/overlay"
)

// PodCIDRMismatchError: the kubelet's --pod-cidr override is not the subnet its Node
// already holds (spec.podCIDR is set once and never changed).
type PodCIDRMismatchError struct {
	Node, Override, Allocated string
}

func (e *PodCIDRMismatchError) Error() string {
	return fmt.Sprintf("node %s: --pod-cidr %s disagrees with the node's spec.podCIDR %s (given by node IPAM or an earlier kubelet, and never changed): drop --pod-cidr, or delete the Node to register it afresh",
		e.Node, e.Override, e.Allocated)
}

// podCIDRDecision is what the kubelet does about its pod subnet, given its Node's
// spec.podCIDR and its override (either may be empty).
type podCIDRDecision struct {
	use   string // the subnet to wire pods in; empty: not known yet
	claim bool   // write the override into the Node's spec (it has none yet)
	err   error
}

func decidePodCIDR(node, allocated, override string) podCIDRDecision {
	if allocated != "" {
		if p, err := netip.ParsePrefix(allocated); err == nil {
			allocated = p.Masked().String()
		}
	}
	switch {
	case allocated != "" && override != "" && allocated != override:
		return podCIDRDecision{err: &PodCIDRMismatchError{Node: node, Override: override, Allocated: allocated}}
	case allocated != "":
		return podCIDRDecision{use: allocated}
	case override != "":
		return podCIDRDecision{use: override, claim: true}
	}
	return podCIDRDecision{}
}

// resolvePodCIDR is the node's pod subnet: its Node's spec.podCIDR, waited for when
// there is none yet (node IPAM assigns it), or the override, written into a Node that has
// none. It returns a *PodCIDRMismatchError when the two disagree.
func (k *Kubelet) resolvePodCIDR(ctx context.Context) (string, error) {
	nodes := k.client.CoreV1().Nodes()
	waiting := false
	for {
		node, err := nodes.Get(ctx, k.opts.NodeName, metav1.GetOptions{})
		if err == nil {
			d := decidePodCIDR(k.opts.NodeName, node.Spec.PodCIDR, k.opts.PodCIDR)
			if d.err != nil {
				return "", d.err
			}
			if !d.claim && d.use != "" {
				return d.use, nil
			}
			if d.claim {
				patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": d.use, "podCIDRs": []string{d.use}},
					"metadata": map[string]any{"resourceVersion": node.ResourceVersion}})
				if _, err = nodes.Patch(ctx, k.opts.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
					return d.use, nil
				}
			}
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if err != nil {
			k.log.Warn("read the node's pod CIDR; retrying", "err", err)
		} else if !waiting {
			waiting = true
			k.log.Info("waiting for the node's pod CIDR (spec.podCIDR, from the controller manager's node IPAM)")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// setupPodNetwork learns the node's pod subnet and wires the CNI network for it (on a
// real network; a kubelet on a fake runtime only reports what its Node says). Then the
// network backend routes the other nodes' subnets (overlay.go).
func (k *Kubelet) setupPodNetwork(ctx context.Context) error {
	if k.net == nil {
		k.podCIDR = k.opts.PodCIDR
		return nil
	}
	cidr, err := k.resolvePodCIDR(ctx)
	if err != nil {
		return err
	}
	if err := k.net.SetPodCIDR(cidr); err != nil {
		return err
	}
	k.podCIDR = cidr
	k.log.Info("pod network", "podCIDR", cidr)
	if k.opts.IPMasq {
		if err := k.masquerade(); err != nil {
			return err
		}
	}
	return k.startOverlay(ctx)
}

// masqTable is the nftables table of the node's masquerade rule, named after the root dir
// so that kubelets sharing a machine keep their own.
func (k *Kubelet) masqTable() string {
	h := fnv.New32a()
	h.Write([]byte(k.opts.RootDir))
	return fmt.Sprintf("wasmkube-masq-%08x", h.Sum32())
}

// masquerade keeps the rule that masquerades pod traffic leaving the cluster CIDR (the
// CNI bridge plugin's ipMasq is not used: it would also masquerade traffic to other
// nodes' pods); with CleanupOnExit it is removed when the kubelet stops.
func (k *Kubelet) masquerade() error {
	cluster := k.opts.ClusterCIDR
	if cluster == "" {
		cluster = overlay.DefaultClusterCIDR
	}
	cp, err := netip.ParsePrefix(cluster)
	if err != nil {
		return fmt.Errorf("kubelet: cluster CIDR %q: %w", cluster, err)
	}
	pod := netip.MustParsePrefix(k.podCIDR)
	if err := overlay.EnsureMasquerade(k.masqTable(), pod, cp.Masked()); err != nil {
		return err
	}
	k.log.Info("masquerading pod traffic that leaves the cluster", "podCIDR", k.podCIDR, "clusterCIDR", cp.Masked().String(), "table", k.masqTable())
	return nil
}

// removeMasquerade is masquerade's undo, on exit with CleanupOnExit.
func (k *Kubelet) removeMasquerade() {
	if !k.opts.IPMasq || k.net == nil {
		return
	}
	if err := overlay.RemoveMasquerade(k.masqTable()); err != nil {
		k.log.Warn("remove the masquerade rule on exit", "err", err)
	}
}

// startOverlay runs the network backend that routes the other nodes' pod subnets
// (kubelet/overlay) until the kubelet stops; with CleanupOnExit it removes its routes then.
func (k *Kubelet) startOverlay(ctx context.Context) error {
	backend := k.opts.NetworkBackend
	if backend == "" {
		backend = overlay.DefaultBackend
	}
	own, _ := netip.ParsePrefix(k.podCIDR)
	o := overlay.Options{Client: k.client, NodeName: k.opts.NodeName, NodeIP: k.opts.NodeIP, PodCIDR: own,
		Backend: backend, VXLANDevice: k.opts.VXLANDevice, VXLANID: k.opts.VXLANID, CleanupOnExit: k.opts.CleanupOnExit, Logger: k.log}
	if err := overlay.CheckBackend(backend); err != nil {
		return err
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		if err := overlay.Run(ctx, o); err != nil {
			k.log.Error("pod network backend stopped: pods of other nodes are not reachable from here", "err", err)
		}
	}()
	return nil
}

// podMTU is the pods' MTU: with the vxlan backend on a routable node IP, the node
// interface's less the VXLAN headers (so pods never send what the tunnel must fragment);
// else 0, the CNI plugin's default.
func podMTU(backend, nodeIP string) int {
	if backend == "" {
		backend = overlay.DefaultBackend
	}
	ip, err := netip.ParseAddr(nodeIP)
	if backend != overlay.BackendVXLAN || err != nil || ip.IsLoopback() {
		return 0
	}
	link, _, err := overlay.NodeLink(ip)
	if err != nil {
		return 1500 - overlay.VXLANOverhead
	}
	return link.Attrs().MTU - overlay.VXLANOverhead
}
