package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/storage"
)

// The resource metrics API (metrics.k8s.io/v1beta1), served by the API server itself rather
// than by an aggregated metrics-server: on a request it asks each node's kubelet for its
// /stats/summary (as metrics-server scrapes kubelets) over the kubelet client certificate the
// exec/log proxy uses, and answers NodeMetrics and PodMetrics from them. Nothing is stored in
// etcd; docs/api-objects.md says why.

// MetricsGroup is the group of the resource metrics API.
const MetricsGroup = metricsv1beta1.GroupName

// StatsWindowHeader is the header in which a kubelet's /stats/summary says over how long its
// CPU rates were measured (the Summary type has no field for it).
const StatsWindowHeader = "X-Wasmkube-Stats-Window"

// nodeStatsTTL is how long one kubelet's summary is reused: kubectl top and the HPA
// controller asking again within it cost the kubelet nothing (kubelets sample every 10 s).
const nodeStatsTTL = 5 * time.Second

// nodeSummary is a kubelet's answer, or why there is none.
type nodeSummary struct {
	at     time.Time
	sum    *statsv1alpha1.Summary
	window time.Duration
	err    error
}

// nodeStatsCache holds the last summary of each node.
type nodeStatsCache struct {
	mu sync.Mutex
	m  map[string]*nodeSummary
}

var (
	nodeMetricsGVR = metricsv1beta1.SchemeGroupVersion.WithResource("nodes")
	podMetricsGVR  = metricsv1beta1.SchemeGroupVersion.WithResource("pods")
)

// summaryOf returns node's summary, asking its kubelet when the cached one is older than
// nodeStatsTTL.
func (s *Server) summaryOf(ctx context.Context, node *corev1.Node) *nodeSummary {
	c := &s.nodeStats
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*nodeSummary{}
	}
	if ns := c.m[node.Name]; ns != nil && time.Since(ns.at) < nodeStatsTTL {
		c.mu.Unlock()
		return ns
	}
	c.mu.Unlock()
	ns := s.fetchSummary(ctx, node)
	c.mu.Lock()
	c.m[node.Name] = ns
	if len(c.m) > 2*65536 { // nodes that left: forget everyone rather than track deletions
		c.m = map[string]*nodeSummary{node.Name: ns}
	}
	c.mu.Unlock()
	return ns
}

func (s *Server) fetchSummary(ctx context.Context, node *corev1.Node) *nodeSummary {
	ns := &nodeSummary{at: time.Now()}
	addr, err := kubeletAddress(node)
	if err != nil {
		ns.err = err
		return ns
	}
	tr, err := s.streamTransport()
	if err != nil {
		ns.err = err
		return ns
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := &url.URL{Scheme: "https", Host: addr, Path: "/stats/summary"}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		ns.err = fmt.Errorf("node %s: stats summary: %w", node.Name, err)
		return ns
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		ns.err = fmt.Errorf("node %s: stats summary: %w", node.Name, err)
		return ns
	}
	if resp.StatusCode != http.StatusOK {
		ns.err = fmt.Errorf("node %s: stats summary: kubelet answered %s", node.Name, resp.Status)
		return ns
	}
	sum := &statsv1alpha1.Summary{}
	if err := json.Unmarshal(body, sum); err != nil {
		ns.err = fmt.Errorf("node %s: stats summary: %w", node.Name, err)
		return ns
	}
	ns.sum = sum
	ns.window, _ = time.ParseDuration(resp.Header.Get(StatsWindowHeader))
	if ns.window <= 0 {
		ns.window = 10 * time.Second
	}
	return ns
}

// summaries asks the kubelets of nodes at once and returns their summaries by node name;
// nodes whose kubelet did not answer are logged and left out, as metrics-server does.
func (s *Server) summaries(ctx context.Context, nodes []*corev1.Node) map[string]*nodeSummary {
	out := make(map[string]*nodeSummary, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, n := range nodes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ns := s.summaryOf(ctx, n)
			if ns.err != nil {
				s.log.Debug("resource metrics: node skipped", "node", n.Name, "err", ns.err)
				return
			}
			mu.Lock()
			out[n.Name] = ns
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// usage is the CPU and memory of stats as a metrics ResourceList; ok is false when the CPU
// has no rate yet.
func usage(cpu *statsv1alpha1.CPUStats, mem *statsv1alpha1.MemoryStats) (corev1.ResourceList, bool) {
	if cpu == nil || cpu.UsageNanoCores == nil || mem == nil || mem.WorkingSetBytes == nil {
		return nil, false
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    *apiresource.NewScaledQuantity(int64(*cpu.UsageNanoCores), apiresource.Nano),
		corev1.ResourceMemory: *apiresource.NewQuantity(int64(*mem.WorkingSetBytes), apiresource.BinarySI),
	}, true
}

// serveMetrics answers get and list of metrics.k8s.io nodes and pods.
func (s *Server) serveMetrics(ctx context.Context, rq *handlers.Request) error {
	info := rq.Info
	switch info.Resource.GVR.Resource {
	case "nodes":
		return s.serveNodeMetrics(ctx, rq)
	case "pods":
		return s.servePodMetrics(ctx, rq)
	}
	return apierrors.NewMethodNotSupported(info.Resource.GVR.GroupResource(), info.Verb)
}

func (s *Server) listObjects(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, q url.Values) ([]any, error) {
	st := s.stores[gvr]
	if name != "" {
		obj, err := st.Storage.Get(ctx, st.Key(ns, name))
		if err != nil {
			return nil, st.APIError(err, name)
		}
		return []any{obj}, nil
	}
	pred, err := st.Predicate(q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		return nil, err
	}
	list, err := st.Storage.List(ctx, st.Prefix(ns), storage.ListOptions{Predicate: pred})
	if err != nil {
		return nil, st.APIError(err, "")
	}
	items, err := handlers.ListItems(list)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it
	}
	return out, nil
}

func (s *Server) serveNodeMetrics(ctx context.Context, rq *handlers.Request) error {
	objs, err := s.listObjects(ctx, corev1.SchemeGroupVersion.WithResource("nodes"), "", rq.Info.Name, rq.Query)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewNotFound(nodeMetricsGVR.GroupResource(), rq.Info.Name)
		}
		return err
	}
	nodes := make([]*corev1.Node, len(objs))
	for i, o := range objs {
		nodes[i] = o.(*corev1.Node)
	}
	sums := s.summaries(ctx, nodes)
	list := &metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: metricsv1beta1.SchemeGroupVersion.String()}}
	for _, n := range nodes {
		ns := sums[n.Name]
		if ns == nil {
			continue
		}
		u, ok := usage(ns.sum.Node.CPU, ns.sum.Node.Memory)
		if !ok {
			continue
		}
		list.Items = append(list.Items, metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: metav1.Now()},
			Timestamp:  ns.sum.Node.CPU.Time, Window: metav1.Duration{Duration: ns.window}, Usage: u,
		})
	}
	if rq.Info.Name != "" {
		if len(list.Items) == 0 {
			return apierrors.NewNotFound(nodeMetricsGVR.GroupResource(), rq.Info.Name)
		}
		return handlers.Respond(rq, http.StatusOK, &list.Items[0])
	}
	return handlers.Respond(rq, http.StatusOK, list)
}

func (s *Server) servePodMetrics(ctx context.Context, rq *handlers.Request) error {
	objs, err := s.listObjects(ctx, corev1.SchemeGroupVersion.WithResource("pods"), rq.Info.Namespace, rq.Info.Name, rq.Query)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewNotFound(podMetricsGVR.GroupResource(), rq.Info.Name)
		}
		return err
	}
	var pods []*corev1.Pod
	nodeNames := map[string]bool{}
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			continue
		}
		pods = append(pods, p)
		nodeNames[p.Spec.NodeName] = true
	}
	var nodes []*corev1.Node
	nst := s.stores[corev1.SchemeGroupVersion.WithResource("nodes")]
	for name := range nodeNames {
		if obj, err := nst.Storage.Get(ctx, nst.Key("", name)); err == nil {
			nodes = append(nodes, obj.(*corev1.Node))
		}
	}
	sums := s.summaries(ctx, nodes)
	list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: metricsv1beta1.SchemeGroupVersion.String()}}
	for _, p := range pods {
		if pm := podMetrics(p, sums[p.Spec.NodeName]); pm != nil {
			list.Items = append(list.Items, *pm)
		}
	}
	if rq.Info.Name != "" {
		if len(list.Items) == 0 {
			return apierrors.NewNotFound(podMetricsGVR.GroupResource(), rq.Info.Name)
		}
		return handlers.Respond(rq, http.StatusOK, &list.Items[0])
	}
	return handlers.Respond(rq, http.StatusOK, list)
}

// podMetrics is pod's entry in its node's summary, or nil when the kubelet has no rate for
// every container of it yet (metrics-server leaves such pods out too).
func podMetrics(p *corev1.Pod, ns *nodeSummary) *metricsv1beta1.PodMetrics {
	if ns == nil {
		return nil
	}
	for _, ps := range ns.sum.Pods {
		if ps.PodRef.UID != string(p.UID) {
			continue
		}
		pm := &metricsv1beta1.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: metav1.Now()},
			Window:     metav1.Duration{Duration: ns.window},
		}
		for _, c := range ps.Containers {
			u, ok := usage(c.CPU, c.Memory)
			if !ok {
				return nil
			}
			if c.CPU.Time.After(pm.Timestamp.Time) {
				pm.Timestamp = c.CPU.Time
			}
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: u})
		}
		if len(pm.Containers) == 0 {
			return nil
		}
		return pm
	}
	return nil
}
