package kubelet

import (
	"bufio"
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	leaseNamespace     = "kube-node-lease"
	leaseDuration      = 40
	leaseRenewInterval = 10 * time.Second
	statusUpdatePeriod = 30 * time.Second
	maxPods            = 110
)

// MachineCapacity reads cpu and memory of this machine and adds pods=110.
func MachineCapacity() v1.ResourceList {
	mem := int64(0)
	if f, err := os.Open("/proc/meminfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			fs := strings.Fields(s.Text())
			if len(fs) >= 2 && fs[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(fs[1], 10, 64)
				mem = kb * 1024
			}
		}
		f.Close()
	}
	return v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(maxPods, resource.DecimalSI),
	}
}

func kernelVersion() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

func osImage() string {
	b, _ := os.ReadFile("/etc/os-release")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}

func machineID() string {
	b, _ := os.ReadFile("/etc/machine-id")
	return strings.TrimSpace(string(b))
}

// nodeStatus is the node's status as of now; runtimeErr is why the container runtime does
// not answer (nil when it does), which makes the node NotReady.
func (k *Kubelet) nodeStatus(old *v1.NodeStatus, runtimeErr error) v1.NodeStatus {
	now := metav1.Now()
	capacity := MachineCapacity()
	hostname, _ := os.Hostname()
	cond := func(t v1.NodeConditionType, s v1.ConditionStatus, reason, msg string) v1.NodeCondition {
		c := v1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		if old != nil {
			for _, oc := range old.Conditions {
				if oc.Type == t && oc.Status == s {
					c.LastTransitionTime = oc.LastTransitionTime
				}
			}
		}
		return c
	}
	ready := cond(v1.NodeReady, v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")
	if runtimeErr != nil {
		ready = cond(v1.NodeReady, v1.ConditionFalse, "KubeletNotReady", "container runtime is down: "+runtimeErr.Error())
	}
	return v1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity.DeepCopy(),
		Phase:       v1.NodeRunning,
		Conditions: []v1.NodeCondition{
			cond(v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			ready,
		},
		Addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: k.opts.NodeIP}, {Type: v1.NodeHostName, Address: hostname}},
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: int32(k.Port())}},
		NodeInfo: v1.NodeSystemInfo{
			MachineID: machineID(), SystemUUID: machineID(), BootID: bootID(), KernelVersion: kernelVersion(), OSImage: osImage(),
			ContainerRuntimeVersion: k.runtimeV, KubeletVersion: Version, KubeProxyVersion: "",
			OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH,
		},
	}
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// registerNode creates the Node (or takes over an existing one of the same name) and writes
// its status, retrying until the API server answers.
func (k *Kubelet) registerNode(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		err := k.tryRegister(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return fmt.Errorf("register node %s: %w (check the node's credential)", k.opts.NodeName, err)
		}
		k.log.Warn("register node; retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(min(attempt+1, 5)) * time.Second):
		}
	}
}

func (k *Kubelet) tryRegister(ctx context.Context) error {
	nodes := k.client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, k.opts.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		hostname, _ := os.Hostname()
		node = &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: k.opts.NodeName, Labels: map[string]string{
				"kubernetes.io/hostname": k.opts.NodeName, "kubernetes.io/os": goruntime.GOOS, "kubernetes.io/arch": goruntime.GOARCH,
				"node.wasmkube.io/host": hostname,
			}},
		}
		if k.opts.PodCIDR != "" {
			node.Spec = v1.NodeSpec{PodCIDR: k.opts.PodCIDR, PodCIDRs: []string{k.opts.PodCIDR}}
		}
		node.Status = k.nodeStatus(nil, k.runtimeErr(ctx))
		node, err = nodes.Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return err // retried: read it next time
		}
	}
	if err != nil {
		return err
	}
	node.Status = k.nodeStatus(&node.Status, k.runtimeErr(ctx))
	_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// heartbeat renews the node's Lease every 10 s and refreshes its status every 30 s.
func (k *Kubelet) heartbeat(ctx context.Context) {
	k.renewLease(ctx)
	lease := time.NewTicker(leaseRenewInterval)
	defer lease.Stop()
	status := time.NewTicker(statusUpdatePeriod)
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			k.renewLease(ctx)
		case <-status.C:
			if err := k.tryRegister(ctx); err != nil && ctx.Err() == nil {
				k.log.Warn("update node status", "err", err)
			}
		}
	}
}

func (k *Kubelet) renewLease(ctx context.Context) {
	leases := k.client.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	holder, dur := k.opts.NodeName, int32(leaseDuration)
	l, err := leases.Get(ctx, k.opts.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		l = &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.opts.NodeName, Namespace: leaseNamespace},
			Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &now},
		}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
	case err == nil:
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &dur, &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil && ctx.Err() == nil {
		k.log.Warn("renew node lease", "err", err)
	}
}

func (k *Kubelet) runtimeErr(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := k.rt.Version(ctx)
	return err
}
