// Package servicelb gives a LoadBalancer Service the nodes' addresses as its ingress, as
// k3s's ServiceLB does: on a cluster without a cloud load balancer a Service of type
// LoadBalancer would otherwise stay <pending>. status.loadBalancer.ingress lists the
// InternalIP of every Ready node, and every node's proxy (kubelet/proxy) answers on those
// addresses at the service's ports. A Service with spec.loadBalancerClass belongs to
// another implementation and is left alone. See docs/proxy.md.
package servicelb

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs and metrics.
const Name = "servicelb"

// Ingress is what status.loadBalancer.ingress of svc should be with nodes: the IPv4
// InternalIPs of the Ready nodes, sorted, with ipMode VIP (the proxy sends traffic for
// them to the endpoints, as for a cluster IP); nil for a Service that is not of type
// LoadBalancer or that names a loadBalancerClass (another controller's).
func Ingress(svc *corev1.Service, nodes []*corev1.Node) []corev1.LoadBalancerIngress {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.LoadBalancerClass != nil {
		return nil
	}
	var ips []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if !nodeReady(n) || n.DeletionTimestamp != nil {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && net.ParseIP(a.Address).To4() != nil && !seen[a.Address] {
				seen[a.Address] = true
				ips = append(ips, a.Address)
			}
		}
	}
	sort.Slice(ips, func(i, j int) bool {
		return string(net.ParseIP(ips[i]).To4()) < string(net.ParseIP(ips[j]).To4())
	})
	var out []corev1.LoadBalancerIngress
	vip := corev1.LoadBalancerIPModeVIP
	for _, ip := range ips {
		out = append(out, corev1.LoadBalancerIngress{IP: ip, IPMode: &vip})
	}
	return out
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Controller keeps the ingress of LoadBalancer Services.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	queue    worker.Queue
	log      *slog.Logger
}

// New wires the controller to the factory's Service and Node informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	si, ni := f.Core().V1().Services(), f.Core().V1().Nodes()
	c := &Controller{client: client, services: si.Lister(), nodes: ni.Lister(),
		synced: []cache.InformerSynced{si.Informer().HasSynced, ni.Informer().HasSynced},
		queue:  worker.NewQueue(Name), log: log.With("controller", Name)}
	if _, err := si.Informer().AddEventHandler(worker.EnqueueAll(c.queue)); err != nil {
		return nil, err
	}
	// A node that comes, goes, turns Ready or not, or changes address changes every
	// LoadBalancer Service's ingress.
	all := func(any) { c.enqueueLoadBalancers() }
	if _, err := ni.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: all, DeleteFunc: all,
		UpdateFunc: func(o, n any) {
			on, nn := o.(*corev1.Node), n.(*corev1.Node)
			if nodeReady(on) != nodeReady(nn) || !equality.Semantic.DeepEqual(on.Status.Addresses, nn.Status.Addresses) ||
				(on.DeletionTimestamp == nil) != (nn.DeletionTimestamp == nil) {
				c.enqueueLoadBalancers()
			}
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueueLoadBalancers() {
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range svcs {
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer || len(s.Status.LoadBalancer.Ingress) > 0 {
			c.queue.Add(s.Namespace + "/" + s.Name)
		}
	}
}

// Run reconciles with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass != nil {
		return nil // another implementation's
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	want := Ingress(svc, nodes)
	if equality.Semantic.DeepEqual(want, svc.Status.LoadBalancer.Ingress) {
		return nil
	}
	cp := svc.DeepCopy()
	cp.Status.LoadBalancer.Ingress = want
	if _, err := c.client.CoreV1().Services(ns).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update load balancer status of service %s: %w", key, err)
	}
	return nil
}
