// Package hollow runs simulated ("hollow") nodes, KWOK-style, for scale work: one
// process registers N nodes, keeps their Leases fresh, marks pods bound to them
// Running (with a fake pod IP) and finishes their deletion, without containers.
// Stopping the process stops the heartbeats, which is how a node failure looks to the
// node lifecycle controller. Pods that run to completion (restartPolicy Never or
// OnFailure, as a Job's) end as scripted by their annotations (ExitCodeAnnotation,
// RunSecondsAnnotation).
package hollow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/internal/kubeclient"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// Options configure the hollow nodes.
type Options struct {
	// Count of nodes, named <Prefix><i> for i in [0, Count).
	Count int
	// Prefix of node names (default "hollow-").
	Prefix string
	// LeaseInterval is how often each node's Lease is renewed (default 10 s; the
	// Lease's duration is 4 times that, as the kubelet's).
	LeaseInterval time.Duration
	// StatusInterval is how often each node's Ready condition is re-posted when nothing
	// changed (default 5 minutes, the kubelet's nodeStatusReportFrequency; the Lease is
	// the frequent heartbeat).
	StatusInterval time.Duration
	// Workers update pod statuses and finish deletions (default 8).
	Workers int
	// QPS and Burst of the API client (default 500 and 1000): the hollow nodes share
	// the machine with the control plane they load.
	QPS   float32
	Burst int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Ready, when set, is closed once every node is registered.
	Ready chan<- struct{}
	// ServeStats gives each node a kubelet /stats/summary on a loopback port of its own
	// (the node's InternalIP becomes 127.0.0.1), reporting what Usage says each running
	// pod uses (default AnnotationUsage), for metrics.k8s.io and the HPA (stats.go).
	ServeStats bool
	Usage      UsageFunc
	// Policies, when set, make every node load the WasmPolicies of the kubelet hooks that
	// select it and report on them (policies.go); nil: the nodes load none, and the
	// WasmPolicy roll-up does not count them.
	Policies *PolicyOptions
}

// Allocatable of every hollow node.
var (
	CPU    = resource.MustParse("4")
	Memory = resource.MustParse("16Gi")
	Pods   = resource.MustParse("110")
)

// NodeName is the name of hollow node i.
func NodeName(prefix string, i int) string { return fmt.Sprintf("%s%d", prefix, i) }

// NewNode returns hollow node i as registered.
func NewNode(prefix string, i int) *v1.Node {
	name := NodeName(prefix, i)
	now := metav1.Now()
	alloc := v1.ResourceList{v1.ResourceCPU: CPU, v1.ResourceMemory: Memory, v1.ResourcePods: Pods}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelHostname:     name,
			v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
			v1.LabelOSStable:     "linux",
			v1.LabelArchStable:   "amd64",
			"wasmkube.io/hollow": "true",
		}},
		Status: v1.NodeStatus{
			Capacity:    alloc,
			Allocatable: alloc,
			Phase:       v1.NodeRunning,
			Conditions:  conditions(now),
			Addresses:   []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: nodeIP(i)}, {Type: v1.NodeHostName, Address: name}},
			NodeInfo: v1.NodeSystemInfo{KubeletVersion: "v1.32.0-wasmkube-hollow", OperatingSystem: "linux", Architecture: "amd64",
				ContainerRuntimeVersion: "hollow://0"},
		},
	}
}

func conditions(now metav1.Time) []v1.NodeCondition {
	c := func(t v1.NodeConditionType, s v1.ConditionStatus, reason, msg string) v1.NodeCondition {
		return v1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []v1.NodeCondition{
		c(v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", "hollow node has sufficient memory available"),
		c(v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", "hollow node has no disk pressure"),
		c(v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", "hollow node has sufficient PID available"),
		c(v1.NodeReady, v1.ConditionTrue, "KubeletReady", "hollow node is posting ready status"),
	}
}

// nodeIP is a fake address for node i in 10.255.0.0/16 .. (i < 65536).
func nodeIP(i int) string { return fmt.Sprintf("10.255.%d.%d", (i/254)%256, i%254+1) }

// podIP is the n-th fake pod address of node i: node i owns 10.<64+i/256>.<i%256>.0/24.
func podIP(i int, n uint32) string {
	ip := net.IPv4(10, byte(64+(i/256)%192), byte(i%256), byte(2+n%252))
	return ip.String()
}

type nodes struct {
	opts   Options
	client kubernetes.Interface
	log    *slog.Logger
	index  map[string]int
	mu     sync.Mutex
	leases map[string]*coordinationv1.Lease
	ipNext []uint32
	uids   []types.UID   // node UIDs, for the leases' owner references
	stats  *statsServers // nil unless Options.ServeStats
}

// Run registers the nodes and keeps them alive until ctx ends. It returns an error if
// registration fails; after that, API errors are logged and retried.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.Count <= 0 {
		return fmt.Errorf("hollow nodes: count must be positive, got %d", opts.Count)
	}
	if opts.Prefix == "" {
		opts.Prefix = "hollow-"
	}
	if opts.LeaseInterval <= 0 {
		opts.LeaseInterval = 10 * time.Second
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = 5 * time.Minute
	}
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.QPS == 0 {
		opts.QPS, opts.Burst = 500, 1000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	cfg.UserAgent = "wasmkube-hollow-nodes"
	if cfg.Dial == nil {
		// Its own TCP connection: client-go would otherwise share one HTTP/2 connection
		// with every other in-process client of the same API server.
		cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	client, err := kubeclient.NewClientset(cfg)
	if err != nil {
		return fmt.Errorf("hollow nodes: client: %w", err)
	}
	n := &nodes{opts: opts, client: client, log: opts.Logger.With("component", "hollow-nodes"),
		index: map[string]int{}, leases: map[string]*coordinationv1.Lease{}, ipNext: make([]uint32, opts.Count), uids: make([]types.UID, opts.Count)}
	for i := 0; i < opts.Count; i++ {
		n.index[NodeName(opts.Prefix, i)] = i
	}
	if opts.ServeStats {
		if n.stats, err = newStatsServers(opts.Count, opts.Usage); err != nil {
			return err
		}
		defer n.stats.close()
		for i := 0; i < opts.Count; i++ {
			go n.stats.serve(ctx, opts.Prefix, i)
		}
	}
	// Registration is a one-off burst; it gets a faster client than the steady state.
	regCfg := rest.CopyConfig(cfg)
	regCfg.QPS, regCfg.Burst = max(opts.QPS, 2000), max(opts.Burst, 4000)
	regClient, err := kubeclient.NewClientset(regCfg)
	if err != nil {
		return fmt.Errorf("hollow nodes: client: %w", err)
	}
	if err := n.register(ctx, regClient); err != nil {
		return err
	}
	n.log.Info("hollow nodes registered", "count", opts.Count, "prefix", opts.Prefix)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if opts.Policies != nil {
		if err := n.runPolicies(ctx, cfg, &wg); err != nil {
			cancel()
			wg.Wait()
			return err
		}
		n.log.Info("hollow nodes load WasmPolicies", "count", opts.Count)
	}
	if opts.Ready != nil {
		close(opts.Ready)
	}
	wg.Add(3)
	go func() { defer wg.Done(); n.heartbeat(ctx, opts.LeaseInterval, n.renewLease) }()
	go func() { defer wg.Done(); n.heartbeat(ctx, opts.StatusInterval, n.postStatus) }()
	go func() { defer wg.Done(); n.runPods(ctx) }()
	wg.Wait()
	return nil
}

func (n *nodes) register(ctx context.Context, client kubernetes.Interface) error {
	steady := n.client
	n.client = client
	defer func() { n.client = steady }()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := 0; i < n.opts.Count && gctx.Err() == nil; i++ {
		g.Go(func() error { return n.registerOne(ctx, client, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// registerOne creates (or takes back) node i with its status and Lease.
func (n *nodes) registerOne(ctx context.Context, client kubernetes.Interface, i int) error {
	node := NewNode(n.opts.Prefix, i)
	if n.stats != nil {
		n.stats.address(node, i)
	}
	loads := ""
	if n.opts.Policies != nil {
		loads = "true"
		node.Annotations = map[string]string{report.LoadsPoliciesAnnotation: loads}
	}
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	fresh := err == nil
	if apierrors.IsAlreadyExists(err) {
		// A restarted process takes its nodes back: fresh status, same object.
		cur, gerr := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("hollow node %s: %w", node.Name, gerr)
		}
		if cur.Annotations[report.LoadsPoliciesAnnotation] != loads {
			// Started with or without policies this time: the roll-up must know.
			if loads == "" {
				delete(cur.Annotations, report.LoadsPoliciesAnnotation)
			} else {
				if cur.Annotations == nil {
					cur.Annotations = map[string]string{}
				}
				cur.Annotations[report.LoadsPoliciesAnnotation] = loads
			}
			if cur, gerr = client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{}); gerr != nil {
				return fmt.Errorf("hollow node %s: %w", node.Name, gerr)
			}
		}
		n.setUID(i, cur.UID)
		cur.Status = node.Status
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	} else if err == nil {
		n.setUID(i, created.UID)
	}
	if fresh && created.Status.Allocatable == nil {
		// Status is a subresource: a create may drop it.
		created.Status = node.Status
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("hollow node %s: register: %w", node.Name, err)
	}
	return n.renewLease(ctx, i)
}

// heartbeat calls f for every node once per interval, spread evenly over the interval
// (so 5000 nodes renewing every 10 s cost a steady 500 requests/s, not bursts).
func (n *nodes) heartbeat(ctx context.Context, interval time.Duration, f func(context.Context, int) error) {
	const tick = 100 * time.Millisecond
	slices := max(1, int(interval/tick))
	per := (n.opts.Count + slices - 1) / slices
	t := time.NewTicker(interval / time.Duration(slices))
	defer t.Stop()
	next := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for k := 0; k < per; k++ {
			i := next
			next = (next + 1) % n.opts.Count
			if err := f(ctx, i); err != nil && ctx.Err() == nil {
				n.log.Warn("heartbeat", "node", NodeName(n.opts.Prefix, i), "err", err)
			}
		}
	}
}

func (n *nodes) renewLease(ctx context.Context, i int) error {
	name := NodeName(n.opts.Prefix, i)
	leases := n.client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	n.mu.Lock()
	l := n.leases[name]
	n.mu.Unlock()
	now := metav1.NewMicroTime(time.Now())
	dur := max(1, int32(4*n.opts.LeaseInterval/time.Second))
	var err error
	if l != nil {
		l = l.DeepCopy()
		l.Spec.RenewTime = &now
		l, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			n.setLease(name, l)
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("renew lease: %w", err)
		}
	}
	cur, err := leases.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cur = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: &dur, RenewTime: &now},
		}
		n.mu.Lock()
		uid := n.uids[i]
		n.mu.Unlock()
		if uid != "" {
			cur.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}}
		}
		cur, err = leases.Create(ctx, cur, metav1.CreateOptions{})
	case err == nil:
		cur.Spec.HolderIdentity = ptr.To(name)
		cur.Spec.LeaseDurationSeconds = &dur
		cur.Spec.RenewTime = &now
		cur, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("hollow node %s: lease: %w", name, err)
	}
	n.setLease(name, cur)
	return nil
}

func (n *nodes) setUID(i int, uid types.UID) {
	n.mu.Lock()
	n.uids[i] = uid
	n.mu.Unlock()
}

func (n *nodes) setLease(name string, l *coordinationv1.Lease) {
	n.mu.Lock()
	n.leases[name] = l
	n.mu.Unlock()
}

// postStatus re-posts the node's conditions with a fresh heartbeat time.
func (n *nodes) postStatus(ctx context.Context, i int) error {
	name := NodeName(n.opts.Prefix, i)
	now := metav1.Now()
	cur, err := n.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Status.Conditions = conditions(now)
	_, err = n.client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	return err
}

// runPods watches pods bound to any node (one informer for all hollow nodes) and
// makes those on hollow nodes Running, or finishes their deletion.
func (n *nodes) runPods(ctx context.Context) {
	factory := informers.NewSharedInformerFactoryWithOptions(n.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if p, ok := obj.(*v1.Pod); ok {
			if _, mine := n.index[p.Spec.NodeName]; mine && n.needsWork(p) {
				q.Add(p.Namespace + "/" + p.Name)
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }})
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	if n.stats != nil {
		n.stats.setPods(inf.GetStore())
	}
	var wg sync.WaitGroup
	for w := 0; w < n.opts.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, quit := q.Get()
				if quit {
					return
				}
				after, err := n.syncPod(ctx, inf.GetStore(), key)
				if err != nil && ctx.Err() == nil {
					n.log.Debug("pod sync", "pod", key, "err", err)
					q.AddRateLimited(key)
				} else {
					q.Forget(key)
					if after > 0 {
						q.AddAfter(key, after)
					}
				}
				q.Done(key)
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func (n *nodes) needsWork(p *v1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return true
	}
	if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
		return false
	}
	if p.Status.Phase == v1.PodRunning && runsToCompletion(p) {
		return true
	}
	return p.Status.Phase != v1.PodRunning || p.Status.PodIP == ""
}

// Annotations that script how a pod of a Job (restartPolicy Never or OnFailure) ends on a
// hollow node: its containers exit with ExitCodeAnnotation (default 0, or 1 when the first
// container's command is `false`) RunSecondsAnnotation seconds after the pod started
// (default 0). Pods that restart Always run until deleted.
const (
	ExitCodeAnnotation   = "hollow.wasmkube.io/exit-code"
	RunSecondsAnnotation = "hollow.wasmkube.io/run-seconds"
)

func runsToCompletion(p *v1.Pod) bool {
	return p.Spec.RestartPolicy == v1.RestartPolicyNever || p.Spec.RestartPolicy == v1.RestartPolicyOnFailure
}

// scriptedExit is the exit code and run time of a pod that runs to completion.
func scriptedExit(p *v1.Pod) (code int32, run time.Duration) {
	if v, err := strconv.ParseInt(p.Annotations[ExitCodeAnnotation], 10, 32); err == nil {
		code = int32(v)
	} else if len(p.Spec.Containers) > 0 && len(p.Spec.Containers[0].Command) == 1 && p.Spec.Containers[0].Command[0] == "false" {
		code = 1
	}
	if v, err := strconv.ParseFloat(p.Annotations[RunSecondsAnnotation], 64); err == nil && v > 0 {
		run = time.Duration(v * float64(time.Second))
	}
	return code, run
}

// syncPod moves one pod on: finish its deletion, make it Running, or end it when it runs
// to completion. A positive duration asks to look again then.
func (n *nodes) syncPod(ctx context.Context, store cache.Store, key string) (time.Duration, error) {
	obj, ok, err := store.GetByKey(key)
	if err != nil || !ok {
		return 0, err
	}
	p := obj.(*v1.Pod)
	if !n.needsWork(p) {
		return 0, nil
	}
	pods := n.client.CoreV1().Pods(p.Namespace)
	if p.DeletionTimestamp != nil {
		uid := p.UID
		err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return 0, nil
		}
		return 0, err
	}
	if p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" {
		return n.finish(ctx, p)
	}
	i := n.index[p.Spec.NodeName]
	n.mu.Lock()
	ip := podIP(i, n.ipNext[i])
	n.ipNext[i]++
	n.mu.Unlock()
	_, err = pods.UpdateStatus(ctx, RunningPod(p, nodeIP(i), ip), metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if apierrors.IsConflict(err) {
		return 0, errors.New("conflict; retrying with the newer pod")
	}
	return 0, err
}

// finish ends a running pod that runs to completion once its scripted run time is over:
// Succeeded or Failed with Never; with OnFailure a failing container restarts in place
// (restartCount goes up, at most once a second) as the kubelet would, and a succeeding one
// ends the pod.
func (n *nodes) finish(ctx context.Context, p *v1.Pod) (time.Duration, error) {
	code, run := scriptedExit(p)
	started := time.Now()
	if p.Status.StartTime != nil {
		started = p.Status.StartTime.Time
	}
	if p.Spec.RestartPolicy == v1.RestartPolicyOnFailure && code != 0 {
		run = max(run, time.Second)
		// Each restart runs the container again for the run time.
		var restarts int32
		for _, cs := range p.Status.ContainerStatuses {
			restarts = max(restarts, cs.RestartCount)
		}
		started = started.Add(time.Duration(restarts) * run)
	}
	if wait := time.Until(started.Add(run)); wait > 0 {
		return wait, nil
	}
	_, err := n.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, FinishedPod(p, code), metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if apierrors.IsConflict(err) {
		return 0, errors.New("conflict; retrying with the newer pod")
	}
	if err == nil && p.Spec.RestartPolicy == v1.RestartPolicyOnFailure && code != 0 {
		return run, nil
	}
	return 0, err
}

// FinishedPod returns a copy of the running pod p whose containers exited with code: the
// pod Succeeded (code 0) or Failed (restartPolicy Never), or, with OnFailure and a non-zero
// code, still Running with each container's restartCount one higher and the exit as its
// last state.
func FinishedPod(p *v1.Pod, code int32) *v1.Pod {
	p = p.DeepCopy()
	now := metav1.Now()
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	term := v1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: now, FinishedAt: now}
	if p.Status.StartTime != nil {
		term.StartedAt = *p.Status.StartTime
	}
	if p.Spec.RestartPolicy == v1.RestartPolicyOnFailure && code != 0 {
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.RestartCount++
			cs.LastTerminationState = v1.ContainerState{Terminated: &term}
			cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}
		}
		return p
	}
	p.Status.Phase = v1.PodSucceeded
	if code != 0 {
		p.Status.Phase = v1.PodFailed
	}
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == v1.PodReady || c.Type == v1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = v1.ConditionFalse, "PodCompleted", now
		}
	}
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		cs.Ready, cs.Started = false, ptr.To(false)
		cs.State = v1.ContainerState{Terminated: &term}
	}
	return p
}

// RunningPod returns a copy of p whose status says it runs on a node at hostIP with
// address podIP, every container started and ready.
func RunningPod(p *v1.Pod, hostIP, podIP string) *v1.Pod {
	p = p.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = v1.PodRunning
	p.Status.HostIP = hostIP
	p.Status.HostIPs = []v1.HostIP{{IP: hostIP}}
	p.Status.PodIP = podIP
	p.Status.PodIPs = []v1.PodIP{{IP: podIP}}
	if p.Status.StartTime == nil {
		p.Status.StartTime = &now
	}
	set := func(t v1.PodConditionType) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == t {
				if p.Status.Conditions[i].Status != v1.ConditionTrue {
					p.Status.Conditions[i].Status = v1.ConditionTrue
					p.Status.Conditions[i].Reason = ""
					p.Status.Conditions[i].Message = ""
					p.Status.Conditions[i].LastTransitionTime = now
				}
				return
			}
		}
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: now})
	}
	for _, t := range []v1.PodConditionType{v1.PodInitialized, v1.PodReadyToStartContainers, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
		set(t)
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "hollow://" + c.Image, ContainerID: "hollow://" + string(p.UID) + "/" + c.Name,
			Ready: true, Started: ptr.To(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return p
}
