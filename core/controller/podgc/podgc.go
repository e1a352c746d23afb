// Package podgc deletes pods nobody else will: pods bound to nodes that no longer exist
// (their kubelet will never finish them), terminating pods that were never scheduled,
// terminating pods whose grace period ran out on an unreachable node, and the oldest
// finished (Succeeded/Failed) pods beyond a threshold.
package podgc

import (
	"context"
	"log/slog"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Name is the controller's name in logs.
const Name = "podgc"

// Options tune the pod GC. Zero values take the defaults.
type Options struct {
	// Period between passes (default 20s).
	Period time.Duration
	// TerminatedThreshold is how many finished pods to keep (default 12500; negative: keep all).
	TerminatedThreshold int
}

// Plan is what one pass deletes.
type Plan struct {
	Orphaned       []*corev1.Pod // bound to a node that does not exist
	Unscheduled    []*corev1.Pod // terminating and never scheduled
	Unreachable    []*corev1.Pod // terminating past their grace period on an unreachable node
	TerminatedOver []*corev1.Pod // oldest finished pods beyond the threshold
}

// Decide builds the plan from the cached pods; node answers from the node cache (the
// controller confirms absence with the API before deleting).
func Decide(pods []*corev1.Pod, node func(string) (*corev1.Node, bool), threshold int, now time.Time) Plan {
	var p Plan
	var terminated []*corev1.Pod
	for _, pod := range pods {
		n, exists := (*corev1.Node)(nil), false
		if pod.Spec.NodeName != "" {
			n, exists = node(pod.Spec.NodeName)
		}
		switch {
		case pod.Spec.NodeName != "" && !exists:
			p.Orphaned = append(p.Orphaned, pod)
		case pod.DeletionTimestamp != nil && exists && unreachable(n) && !now.Before(pod.DeletionTimestamp.Time):
			p.Unreachable = append(p.Unreachable, pod)
		case pod.Spec.NodeName == "" && pod.DeletionTimestamp != nil:
			p.Unscheduled = append(p.Unscheduled, pod)
		case pod.DeletionTimestamp == nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed):
			terminated = append(terminated, pod)
		}
	}
	if threshold >= 0 && len(terminated) > threshold {
		sort.SliceStable(terminated, func(i, j int) bool {
			return terminated[i].CreationTimestamp.Before(&terminated[j].CreationTimestamp)
		})
		p.TerminatedOver = terminated[:len(terminated)-threshold]
	}
	return p
}

// unreachable reports whether the node carries the unreachable NoExecute taint: its kubelet
// has stopped reporting and will not finish its pods' deletions.
func unreachable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// Controller is the pod garbage collector.
type Controller struct {
	opts       Options
	client     kubernetes.Interface
	podLister  corelisters.PodLister
	nodeLister corelisters.NodeLister
	synced     []cache.InformerSynced
	log        *slog.Logger
}

// New wires the pod GC to the factory's Pod and Node informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, opts Options, log *slog.Logger) *Controller {
	if opts.Period <= 0 {
		opts.Period = 20 * time.Second
	}
	if opts.TerminatedThreshold == 0 {
		opts.TerminatedThreshold = 12500
	}
	if log == nil {
		log = slog.Default()
	}
	podInf, nodeInf := f.Core().V1().Pods(), f.Core().V1().Nodes()
	return &Controller{opts: opts, client: client, podLister: podInf.Lister(), nodeLister: nodeInf.Lister(),
		synced: []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced},
		log:    log.With("controller", Name)}
}

// Run collects every Period until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	t := time.NewTicker(c.opts.Period)
	defer t.Stop()
	for {
		c.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass runs one collection and returns how many pods it deleted.
func (c *Controller) Pass(ctx context.Context) int {
	pods, err := c.podLister.List(labels.Everything())
	if err != nil {
		return 0
	}
	plan := Decide(pods, func(name string) (*corev1.Node, bool) {
		n, err := c.nodeLister.Get(name)
		return n, err == nil
	}, c.opts.TerminatedThreshold, time.Now())
	deleted := 0
	// The node cache may lag behind a node that was just created: ask the API once per node.
	gone := map[string]bool{}
	for _, p := range plan.Orphaned {
		g, ok := gone[p.Spec.NodeName]
		if !ok {
			_, err := c.client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			g = apierrors.IsNotFound(err)
			gone[p.Spec.NodeName] = g
		}
		if g && c.delete(ctx, p, true, "node "+p.Spec.NodeName+" no longer exists") {
			deleted++
		}
	}
	for _, p := range plan.Unscheduled {
		if c.delete(ctx, p, true, "terminating and never scheduled") {
			deleted++
		}
	}
	for _, p := range plan.Unreachable {
		if c.delete(ctx, p, true, "grace period over on unreachable node "+p.Spec.NodeName) {
			deleted++
		}
	}
	for _, p := range plan.TerminatedOver {
		if c.delete(ctx, p, false, "finished pods over the threshold") {
			deleted++
		}
	}
	return deleted
}

func (c *Controller) delete(ctx context.Context, p *corev1.Pod, force bool, why string) bool {
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}
	if force {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Warn("delete pod", "pod", p.Namespace+"/"+p.Name, "why", why, "err", err)
		return false
	}
	c.log.Info("deleted pod", "pod", p.Namespace+"/"+p.Name, "why", why)
	return err == nil
}
