// Package netpol enforces NetworkPolicy (networking.k8s.io/v1) on the node, in the kubelet
// process, as the network policy controllers of k3s (kube-router's) and Calico do: it
// watches every NetworkPolicy, pod and namespace of the cluster and keeps one nftables
// table (github.com/google/nftables, as kubelet/proxy) that filters forwarded pod traffic.
// Plan turns the objects into a Ruleset (pure); the table writes it. A policy follows its
// pods' addresses wherever they run, so a connection between two hosts is checked by the
// egress rules on the source's node and the ingress rules on the destination's.
// See docs/networkpolicy.md.
package netpol

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/kubelet/internal/syncloop"
)

// Options configure an Enforcer.
type Options struct {
	// Table is the nftables table's name (TableName(key)).
	Table string
	// Informers is a cluster-wide factory: NetworkPolicies, Pods and Namespaces are read
	// from it.
	Informers informers.SharedInformerFactory
	Logger    *slog.Logger
	// MinSyncInterval spaces table rewrites under a burst of changes; default 50 ms.
	MinSyncInterval time.Duration
}

// Enforcer keeps the node's policy table in step with the API.
type Enforcer struct {
	opts     Options
	log      *slog.Logger
	tbl      *table
	policies networkinglisters.NetworkPolicyLister
	pods     corelisters.PodLister
	nss      corelisters.NamespaceLister
	synced   []cache.InformerSynced
	changed  chan struct{}

	mu      sync.Mutex
	last    *Ruleset
	applied int
}

// TableName is the table of a node keyed by key (the kubelet's root dir), so kubelets
// sharing a machine never share one and a restarted kubelet replaces its own.
func TableName(key string) string {
	h := sha256.Sum256([]byte(key))
	return "wasmkube-netpol-" + hex.EncodeToString(h[:4])
}

// New registers the Enforcer's handlers on the informers (start them after).
func New(opts Options) (*Enforcer, error) {
	if opts.Informers == nil || opts.Table == "" {
		return nil, errors.New("netpol: Informers and Table are required")
	}
	if opts.MinSyncInterval == 0 {
		opts.MinSyncInterval = 50 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	tbl, err := newTable(opts.Table)
	if err != nil {
		return nil, err
	}
	e := &Enforcer{opts: opts, log: opts.Logger.With("component", "netpol", "table", opts.Table), tbl: tbl,
		changed: make(chan struct{}, 1)}
	npi := opts.Informers.Networking().V1().NetworkPolicies()
	pi, ni := opts.Informers.Core().V1().Pods(), opts.Informers.Core().V1().Namespaces()
	e.policies, e.pods, e.nss = npi.Lister(), pi.Lister(), ni.Lister()
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { e.kick() }, UpdateFunc: func(o, n any) { e.kick() }, DeleteFunc: func(any) { e.kick() },
	}
	for _, inf := range []cache.SharedIndexInformer{npi.Informer(), ni.Informer()} {
		if _, err := inf.AddEventHandler(kick); err != nil {
			return nil, err
		}
		e.synced = append(e.synced, inf.HasSynced)
	}
	// Pods change status all the time; only what Plan reads matters.
	if _, err := pi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { e.kick() },
		UpdateFunc: func(o, n any) {
			if podMatters(o.(*v1.Pod), n.(*v1.Pod)) {
				e.kick()
			}
		},
		DeleteFunc: func(any) { e.kick() },
	}); err != nil {
		return nil, err
	}
	e.synced = append(e.synced, pi.Informer().HasSynced)
	return e, nil
}

// podMatters reports whether a pod's update can change the Ruleset: its address, labels,
// phase (finished pods leave) or named ports.
func podMatters(o, n *v1.Pod) bool {
	return o.Status.PodIP != n.Status.PodIP || o.Status.Phase != n.Status.Phase ||
		!reflect.DeepEqual(o.Labels, n.Labels) || o.Spec.HostNetwork != n.Spec.HostNetwork
}

func (e *Enforcer) kick() {
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// Run programs the table once the informers have synced and after every change, until
// ctx ends; then it deletes the table.
func (e *Enforcer) Run(ctx context.Context) {
	defer func() {
		if err := e.tbl.remove(); err != nil {
			e.log.Warn("remove table", "err", err)
		}
	}()
	if !cache.WaitForCacheSync(ctx.Done(), e.synced...) {
		return
	}
	e.log.Info("network policy enforcement running")
	syncloop.Run(ctx, e.changed, e.opts.MinSyncInterval, e.Sync, func(err error) { e.log.Error("program network policy rules", "err", err) })
}

// Sync rewrites the table from the informers' state when the Ruleset changed.
func (e *Enforcer) Sync() error {
	start := time.Now()
	nps, err := e.policies.List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := e.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	nss, err := e.nss.List(labels.Everything())
	if err != nil {
		return err
	}
	rs := Plan(nps, pods, nss)
	e.mu.Lock()
	same := e.last != nil && reflect.DeepEqual(*e.last, rs)
	e.mu.Unlock()
	if same {
		return nil
	}
	if err := e.tbl.apply(rs); err != nil {
		e.mu.Lock()
		e.last = nil
		e.mu.Unlock()
		return err
	}
	e.mu.Lock()
	e.last = &rs
	e.applied++
	e.mu.Unlock()
	e.log.Debug("network policy rules programmed", "policies", len(nps), "sets", len(rs.Sets), "rules", len(rs.Rules), "took", time.Since(start))
	return nil
}

// Applied is how many times the table was rewritten.
func (e *Enforcer) Applied() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.applied
}

// RemoveTable deletes a table left by an enforcer that did not stop cleanly.
func RemoveTable(name string) error {
	t, err := newTable(name)
	if err != nil {
		return err
	}
	return t.remove()
}
