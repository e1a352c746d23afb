// Package nodelifecycle watches node heartbeats (the kubelet's Lease in kube-node-lease and
// its Ready condition). A node that has not been heard from for the grace period becomes
// Unknown and gets the unreachable NoExecute and NoSchedule taints (not-ready when its kubelet
// reports Ready=False); the taint manager then evicts its pods when their tolerations run
// out, and their controllers replace them elsewhere. When the kubelet reports Ready again
// the taints go.
package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs, metrics and events.
const Name = "nodelifecycle"

// LeaseNamespace holds the kubelets' heartbeat Leases, one per node, named after it.
const LeaseNamespace = corev1.NamespaceNodeLease

const nodeNameIndex = "spec.nodeName"

// Options tune the controller. Zero values take the defaults.
type Options struct {
	// GracePeriod without a heartbeat before a node is Unknown (default 40s).
	GracePeriod time.Duration
	// MonitorPeriod between heartbeat checks (default 5s, at most GracePeriod/4).
	MonitorPeriod time.Duration
	// DefaultTolerationSeconds applies to pods without any toleration for the
	// not-ready/unreachable taints (default 300; negative: evict those at once).
	DefaultTolerationSeconds *int64
}

func (o Options) withDefaults() Options {
	if o.GracePeriod <= 0 {
		o.GracePeriod = 40 * time.Second
	}
	if o.MonitorPeriod <= 0 {
		o.MonitorPeriod = 5 * time.Second
	}
	o.MonitorPeriod = max(min(o.MonitorPeriod, o.GracePeriod/4), 100*time.Millisecond)
	if o.DefaultTolerationSeconds == nil {
		d := int64(300)
		o.DefaultTolerationSeconds = &d
	}
	return o
}

type health struct {
	probe     time.Time // local time of the last heartbeat we saw change
	leaseSeen string    // lease renewTime we last saw
	heartbeat time.Time // Ready condition lastHeartbeatTime we last saw
}

// Controller is the node lifecycle controller with its taint manager.
type Controller struct {
	opts        Options
	client      kubernetes.Interface
	nodeLister  corelisters.NodeLister
	leaseLister coordlisters.LeaseLister
	podLister   corelisters.PodLister
	podIndex    cache.Indexer
	synced      []cache.InformerSynced
	nodeQueue   worker.Queue // node names: reconcile taints
	podQueue    worker.Queue // pod keys: evict or wait
	recorder    record.EventRecorder
	log         *slog.Logger
	now         func() time.Time

	mu     sync.Mutex
	health map[string]*health
}

// New wires the controller to the factory's Node, Lease and Pod informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, opts Options, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	nodeInf, leaseInf, podInf := f.Core().V1().Nodes(), f.Coordination().V1().Leases(), f.Core().V1().Pods()
	if _, ok := podInf.Informer().GetIndexer().GetIndexers()[nodeNameIndex]; !ok {
		if err := podInf.Informer().AddIndexers(cache.Indexers{nodeNameIndex: func(obj any) ([]string, error) {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
				return []string{p.Spec.NodeName}, nil
			}
			return nil, nil
		}}); err != nil {
			return nil, err
		}
	}
	c := &Controller{
		opts: opts.withDefaults(), client: client,
		nodeLister: nodeInf.Lister(), leaseLister: leaseInf.Lister(), podLister: podInf.Lister(),
		podIndex:  podInf.Informer().GetIndexer(),
		synced:    []cache.InformerSynced{nodeInf.Informer().HasSynced, leaseInf.Informer().HasSynced, podInf.Informer().HasSynced},
		nodeQueue: worker.NewQueue(Name + "_nodes"),
		podQueue:  worker.NewQueue(Name + "_evictions"),
		recorder:  recorder, log: log.With("controller", Name), now: time.Now,
		health: map[string]*health{},
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nodeQueue.Add(obj.(*corev1.Node).Name) },
		UpdateFunc: c.nodeUpdated,
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.mu.Lock()
				delete(c.health, key)
				c.mu.Unlock()
			}
		},
	}); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueuePod,
		UpdateFunc: func(o, n any) {
			if o.(*corev1.Pod).Spec.NodeName != n.(*corev1.Pod).Spec.NodeName {
				c.enqueuePod(n)
			}
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueuePod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	if n, err := c.nodeLister.Get(p.Spec.NodeName); err == nil && hasNoExecute(n) {
		c.podQueue.Add(p.Namespace + "/" + p.Name)
	}
}

func hasNoExecute(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

func (c *Controller) nodeUpdated(o, n any) {
	old, cur := o.(*corev1.Node), n.(*corev1.Node)
	c.nodeQueue.Add(cur.Name)
	if !equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
		c.enqueuePodsOn(cur.Name)
	}
}

func (c *Controller) enqueuePodsOn(node string) {
	objs, err := c.podIndex.ByIndex(nodeNameIndex, node)
	if err != nil {
		return
	}
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.DeletionTimestamp == nil {
			c.podQueue.Add(p.Namespace + "/" + p.Name)
		}
	}
}

// Run monitors heartbeats and reconciles taints and evictions until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); worker.Run(ctx, Name+"_nodes", c.nodeQueue, workers, c.syncTaints, c.log) }()
	go func() { defer wg.Done(); worker.Run(ctx, Name+"_evictions", c.podQueue, workers, c.syncPod, c.log) }()
	go func() {
		defer wg.Done()
		t := time.NewTicker(c.opts.MonitorPeriod)
		defer t.Stop()
		for {
			if err := c.monitor(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("node health check failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	wg.Wait()
}

// observe updates the node's health record and returns when it was last heard from.
func (c *Controller) observe(n *corev1.Node, lease *coordv1.Lease, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.health[n.Name]
	if !ok {
		// A node we have not seen yet gets a full grace period from now: the controller
		// manager may just have started (or taken over) and knows nothing of its past.
		h = &health{probe: now}
		c.health[n.Name] = h
	}
	if r := ReadyCondition(n); r != nil && !r.LastHeartbeatTime.Time.Equal(h.heartbeat) {
		if ok {
			h.probe = now
		}
		h.heartbeat = r.LastHeartbeatTime.Time
	}
	if lease != nil && lease.Spec.RenewTime != nil {
		seen := lease.Spec.RenewTime.String() + "/" + lease.ResourceVersion
		if seen != h.leaseSeen {
			if ok {
				h.probe = now
			}
			h.leaseSeen = seen
		}
	}
	return h.probe
}

// monitor marks nodes Unknown whose heartbeat is older than the grace period.
func (c *Controller) monitor(ctx context.Context) error {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	now := c.now()
	for _, n := range nodes {
		lease, _ := c.leaseLister.Leases(LeaseNamespace).Get(n.Name)
		probe := c.observe(n, lease, now)
		if now.Sub(probe) <= c.opts.GracePeriod {
			continue
		}
		conds, changed := UnknownConditions(n.Status.Conditions, now)
		if !changed {
			continue
		}
		cp := n.DeepCopy()
		cp.Status.Conditions = conds
		if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
			if !apierrors.IsNotFound(err) {
				c.log.Warn("mark node unknown", "node", n.Name, "err", err)
			}
			continue
		}
		c.log.Info("node stopped heartbeating", "node", n.Name, "lastHeard", probe)
		c.recorder.Eventf(&corev1.ObjectReference{Kind: "Node", Name: n.Name, UID: types.UID(n.Name), APIVersion: "v1"},
			corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", n.Name)
		c.markPodsNotReady(ctx, n.Name)
	}
	return nil
}

// markPodsNotReady sets Ready=False on the pods of an unreachable node, so that Services
// stop sending them traffic before they are evicted.
func (c *Controller) markPodsNotReady(ctx context.Context, node string) {
	objs, _ := c.podIndex.ByIndex(nodeNameIndex, node)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		cp := p.DeepCopy()
		changed := false
		for i := range cp.Status.Conditions {
			cond := &cp.Status.Conditions[i]
			if cond.Type == corev1.PodReady && cond.Status != corev1.ConditionFalse {
				cond.Status = corev1.ConditionFalse
				cond.Reason = "NodeNotReady"
				cond.LastTransitionTime = metav1.NewTime(c.now())
				changed = true
			}
		}
		if !changed {
			continue
		}
		if _, err := c.client.CoreV1().Pods(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			c.log.Debug("mark pod not ready", "pod", cp.Namespace+"/"+cp.Name, "err", err)
		}
	}
}

// syncTaints makes a node's managed taints match its Ready condition.
func (c *Controller) syncTaints(ctx context.Context, name string) error {
	n, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	taints, changed := ReconcileTaints(n.Spec.Taints, WantedTaintKey(ReadyCondition(n)), c.now())
	if !changed {
		return nil
	}
	cp := n.DeepCopy()
	cp.Spec.Taints = taints
	if _, err := c.client.CoreV1().Nodes().Update(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update taints of node %s: %w", name, err)
	}
	return nil
}

// syncPod evicts one pod from a NoExecute-tainted node when its tolerations run out.
func (c *Controller) syncPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	p, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
		return nil
	}
	n, err := c.nodeLister.Get(p.Spec.NodeName)
	if err != nil {
		return nil // a missing node is the pod GC's business
	}
	ev := Decide(p, n.Spec.Taints, *c.opts.DefaultTolerationSeconds, c.now())
	if !ev.Now {
		if ev.After > 0 {
			return worker.RequeueAfter(ev.After)
		}
		return nil
	}
	c.recorder.Eventf(p, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s", key)
	err = c.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("evict pod %s from node %s: %w", key, n.Name, err)
	}
	c.log.Info("evicted pod from tainted node", "pod", key, "node", n.Name)
	return nil
}
