// Package endpoints keeps one Endpoints object per Service with a selector: the IPs of the
// selected pods, ready ones under addresses and not-ready ones under notReadyAddresses, so
// a pod whose readiness probe fails visibly leaves its Service.
package endpoints

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs and metrics.
const Name = "endpoints"

// Subsets computes the Endpoints subsets of svc for the pods it selects: pods with an IP that
// are not terminating or finished, grouped by their resolved port list, addresses sorted.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	type group struct {
		ports           []corev1.EndpointPort
		ready, notReady []corev1.EndpointAddress
	}
	groups := map[string]*group{}
	var order []string
	for _, p := range pods {
		if p.Status.PodIP == "" || !podstate.IsActive(p) {
			continue
		}
		ports, ok := PodPorts(svc, p)
		if !ok {
			continue
		}
		var sig strings.Builder
		for _, pt := range ports {
			fmt.Fprintf(&sig, "%s/%d/%s;", pt.Name, pt.Port, pt.Protocol)
		}
		g, ok := groups[sig.String()]
		if !ok {
			g = &group{ports: ports}
			groups[sig.String()] = g
			order = append(order, sig.String())
		}
		addr := corev1.EndpointAddress{IP: p.Status.PodIP, NodeName: nodeName(p),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
		// As upstream's endpoints controller: a pod whose subdomain names this Service is
		// published under its hostname, which is what the cluster DNS answers
		// <hostname>.<svc>.<ns>.svc.<zone> with (a StatefulSet's web-0.web...).
		if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name && p.Namespace == svc.Namespace {
			addr.Hostname = p.Spec.Hostname
		}
		if svc.Spec.PublishNotReadyAddresses || podstate.IsReady(p) {
			g.ready = append(g.ready, addr)
		} else {
			g.notReady = append(g.notReady, addr)
		}
	}
	sort.Strings(order)
	var out []corev1.EndpointSubset
	for _, k := range order {
		g := groups[k]
		byIP := func(a []corev1.EndpointAddress) {
			sort.Slice(a, func(i, j int) bool { return a[i].IP < a[j].IP })
		}
		byIP(g.ready)
		byIP(g.notReady)
		out = append(out, corev1.EndpointSubset{Addresses: g.ready, NotReadyAddresses: g.notReady, Ports: g.ports})
	}
	return out
}

func nodeName(p *corev1.Pod) *string {
	if p.Spec.NodeName == "" {
		return nil
	}
	n := p.Spec.NodeName
	return &n
}

// PodPorts maps the service's ports to the pod's: a numeric targetPort as is (the port
// itself if unset), a named one through the pod's container ports. A pod lacking a named
// port is left out, as upstream.
func PodPorts(svc *corev1.Service, p *corev1.Pod) ([]corev1.EndpointPort, bool) {
	var out []corev1.EndpointPort
	for _, sp := range svc.Spec.Ports {
		port := sp.Port
		switch {
		case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
			found := false
			for _, c := range p.Spec.Containers {
				for _, cp := range c.Ports {
					if cp.Name == sp.TargetPort.StrVal && (cp.Protocol == sp.Protocol || cp.Protocol == "" && sp.Protocol == corev1.ProtocolTCP) {
						port, found = cp.ContainerPort, true
					}
				}
			}
			if !found {
				return nil, false
			}
		case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0:
			port = sp.TargetPort.IntVal
		}
		proto := sp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, corev1.EndpointPort{Name: sp.Name, Port: port, Protocol: proto, AppProtocol: sp.AppProtocol})
	}
	return out, true
}

// Controller is the Endpoints controller.
type Controller struct {
	client    kubernetes.Interface
	svcLister corelisters.ServiceLister
	podLister corelisters.PodLister
	epLister  corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     worker.Queue
	log       *slog.Logger
}

// New wires the controller to the factory's Service, Pod and Endpoints informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	svcInf, podInf, epInf := f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Endpoints()
	c := &Controller{client: client, svcLister: svcInf.Lister(), podLister: podInf.Lister(), epLister: epInf.Lister(),
		synced: []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, epInf.Informer().HasSynced},
		queue:  worker.NewQueue(Name), log: log.With("controller", Name)}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := svcInf.Informer().AddEventHandler(worker.EnqueueAll(c.queue)); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.podChanged,
		UpdateFunc: func(o, n any) {
			c.podChanged(n)
			if !equality.Semantic.DeepEqual(o.(*corev1.Pod).Labels, n.(*corev1.Pod).Labels) {
				c.podChanged(o)
			}
		},
		DeleteFunc: c.podChanged,
	}); err != nil {
		return nil, err
	}
	// An Endpoints object edited or deleted by someone else is put back.
	if _, err := epInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) podChanged(obj any) {
	for _, key := range SelectingServices(c.svcLister, obj) {
		c.queue.Add(key)
	}
}

// SelectingServices returns the keys (namespace/name) of the Services whose selector
// matches the pod obj (a *Pod or a tombstone of one): the Services whose endpoints a
// change of that pod can change. Both the Endpoints and the EndpointSlice controllers
// queue them.
func SelectingServices(svcLister corelisters.ServiceLister, obj any) []string {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	svcs, err := svcLister.Services(p.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, s := range svcs {
		if s.Spec.Selector != nil && labels.SelectorFromValidatedSet(s.Spec.Selector).Matches(labels.Set(p.Labels)) {
			keys = append(keys, s.Namespace+"/"+s.Name)
		}
	}
	return keys
}

// Run reconciles Endpoints with workers workers until ctx is done.
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
	svc, err := c.svcLister.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The Service is gone; its Endpoints go with it (if we made them).
		err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpoints %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Selector == nil {
		return nil // endpoints of selector-less services are the user's
	}
	pods, err := c.podLister.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	subsets := Subsets(svc, pods)
	cur, err := c.epLister.Endpoints(ns).Get(name)
	if apierrors.IsNotFound(err) {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: svc.Labels}, Subsets: subsets}
		_, err := c.client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create endpoints %s: %w", key, err)
		}
		return err
	}
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(cur.Subsets, subsets) && equality.Semantic.DeepEqual(cur.Labels, svc.Labels) {
		return nil
	}
	cp := cur.DeepCopy()
	cp.Subsets, cp.Labels = subsets, svc.Labels
	if _, err := c.client.CoreV1().Endpoints(ns).Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update endpoints %s: %w", key, err)
	}
	return nil
}
