// Package nodeipam gives every Node a pod subnet out of the cluster CIDR, as upstream's
// range allocator (kube-controller-manager --allocate-node-cidrs): spec.podCIDR and
// spec.podCIDRs are set once and never changed; a deleted Node's subnet is released; when
// the cluster CIDR is used up the Node gets a CIDRNotAvailable Event and waits for a
// subnet to come free. The allocation lives only in the Nodes: a restarted controller
// rebuilds it from their spec.podCIDR before it gives anything out.
package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeipam"

// Event reasons, upstream's.
const (
	ReasonCIDRNotAvailable     = "CIDRNotAvailable"
	ReasonCIDRAssignmentFailed = "CIDRAssignmentFailed"
)

// Options choose the cluster CIDR and the per-node mask (defaults DefaultClusterCIDR and
// DefaultNodeMaskSize).
type Options struct {
	ClusterCIDR  string
	NodeMaskSize int
}

// Controller assigns pod subnets to Nodes.
type Controller struct {
	client kubernetes.Interface
	nodes  corelisters.NodeLister
	synced cache.InformerSynced
	queue  worker.Queue
	rec    record.EventRecorder
	log    *slog.Logger

	mu      sync.Mutex
	alloc   *Allocator
	waiting map[string]bool   // nodes told that the cluster CIDR is used up
	foreign map[string]string // nodes whose subnet is not the controller's, as last logged
}

// New checks the options and wires the controller to the factory's Node informer.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, rec record.EventRecorder, o Options, log *slog.Logger) (*Controller, error) {
	if o.ClusterCIDR == "" {
		o.ClusterCIDR = DefaultClusterCIDR
	}
	if o.NodeMaskSize == 0 {
		o.NodeMaskSize = DefaultNodeMaskSize
	}
	a, err := NewAllocator(o.ClusterCIDR, o.NodeMaskSize)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	inf := f.Core().V1().Nodes()
	c := &Controller{client: client, nodes: inf.Lister(), synced: inf.Informer().HasSynced,
		queue: worker.NewQueue(Name), rec: rec, log: log.With("controller", Name), alloc: a, waiting: map[string]bool{}, foreign: map[string]string{}}
	_, err = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, n any) { c.enqueue(n) },
		DeleteFunc: c.enqueue,
	})
	return c, err
}

func (c *Controller) enqueue(o any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
		c.queue.Add(key)
	}
}

// Run rebuilds the allocation from the Nodes once the informer has synced, then assigns
// subnets with the given number of workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	nodes, _ := c.nodes.List(labels.Everything())
	c.mu.Lock()
	for _, n := range nodes {
		if n.Spec.PodCIDR == "" {
			continue
		}
		if err := c.alloc.Occupy(n.Name, n.Spec.PodCIDR); err != nil {
			c.log.Warn("a node's pod CIDR is not the controller's to manage", "node", n.Name, "err", err)
		}
	}
	free := c.alloc.Free()
	c.mu.Unlock()
	c.log.Info("node subnets", "clusterCIDR", c.alloc.ClusterCIDR().String(), "free", free, "nodes", len(nodes))
	worker.Run(ctx, Name, c.queue, workers, c.reconcile, c.log)
}

// reconcile assigns the named Node a subnet if it has none, records one it has, and
// releases the subnet of a Node that is gone.
func (c *Controller) reconcile(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		released := c.alloc.Release(name)
		delete(c.waiting, name)
		delete(c.foreign, name)
		c.mu.Unlock()
		if released {
			c.log.Info("released the pod CIDR of a deleted node", "node", name)
			c.retryWaiting()
		}
		return nil
	}
	if err != nil {
		return err
	}
	if node.Spec.PodCIDR != "" {
		c.mu.Lock()
		delete(c.waiting, node.Name)
		err := c.alloc.Occupy(node.Name, node.Spec.PodCIDR)
		told := c.foreign[node.Name] == node.Spec.PodCIDR
		if err != nil {
			c.foreign[node.Name] = node.Spec.PodCIDR
		}
		c.mu.Unlock()
		if err != nil && !told {
			// Not ours to change (spec.podCIDR is immutable): said once per node and subnet.
			c.log.Warn("a node's pod CIDR is not the controller's to manage", "node", node.Name, "err", err)
		}
		return nil
	}
	c.mu.Lock()
	cidr, err := c.alloc.Allocate(node.Name)
	c.mu.Unlock()
	if ex := (*ExhaustedError)(nil); errors.As(err, &ex) {
		// Said once per node (its status updates bring it back every 30 s); retried when
		// a subnet is released.
		c.mu.Lock()
		told := c.waiting[node.Name]
		c.waiting[node.Name] = true
		c.mu.Unlock()
		if !told {
			c.log.Error("node gets no pod CIDR", "node", node.Name, "err", err)
			c.rec.Eventf(node, corev1.EventTypeWarning, ReasonCIDRNotAvailable, "Node %s has no pod CIDR: %v", node.Name, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidr.String(), "podCIDRs": []string{cidr.String()}}})
	_, err = c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.mu.Lock()
		c.alloc.Release(node.Name)
		c.mu.Unlock()
		return nil
	case err != nil:
		// Someone else (a kubelet's --pod-cidr) may have set it meanwhile: the update
		// event brings the node back, and Occupy then holds the truth.
		c.mu.Lock()
		c.alloc.Release(node.Name)
		c.mu.Unlock()
		c.rec.Eventf(node, corev1.EventTypeWarning, ReasonCIDRAssignmentFailed, "Node %s: assigning pod CIDR %s: %v", node.Name, cidr, err)
		return fmt.Errorf("node %s: set spec.podCIDR %s: %w", node.Name, cidr, err)
	}
	c.log.Info("assigned a pod CIDR", "node", node.Name, "podCIDR", cidr.String())
	return nil
}

// retryWaiting requeues the Nodes that still have no subnet (after one came free).
func (c *Controller) retryWaiting() {
	nodes, _ := c.nodes.List(labels.Everything())
	for _, n := range nodes {
		if n.Spec.PodCIDR == "" {
			c.queue.Add(n.Name)
		}
	}
}
