// Package queue is the scheduling queue: activeQ (a heap by spec.priority, then by when
// the pod entered the queue), backoffQ (pods that failed, waiting 1 s doubling up to 10 s
// per attempt) and the unschedulable pool (pods no node fits, waiting for a cluster
// event that may help: node added or changed, pod deleted; and at most 5 minutes).
// It also remembers pods nominated to nodes by preemption.
package queue

import (
	"container/heap"
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Defaults as upstream.
const (
	DefaultInitialBackoff        = 1 * time.Second
	DefaultMaxBackoff            = 10 * time.Second
	DefaultMaxUnschedulableDelay = 5 * time.Minute
)

// QueuedPodInfo is a pod in the queue with its scheduling history.
type QueuedPodInfo struct {
	*framework.PodInfo
	// Timestamp is when the pod last entered activeQ or backoffQ.
	Timestamp time.Time
	// InitialAttemptTimestamp is when the pod was first popped.
	InitialAttemptTimestamp time.Time
	// Attempts counts scheduling attempts.
	Attempts int
	// UnschedulablePlugins rejected the pod in its last attempt.
	UnschedulablePlugins map[string]struct{}
	// Created is when the pod was first seen (for latency metrics).
	Created time.Time

	// groupTime and group order a gang's members together in activeQ (Options.GroupKey),
	// fixed when the pod entered the queue so that the heap's order never changes under it.
	groupTime time.Time
	group     string
}

// Key is the namespace/name of the pod.
func (q *QueuedPodInfo) Key() string { return q.Pod.Namespace + "/" + q.Pod.Name }

// Options tune the queue; zero values are the defaults.
type Options struct {
	InitialBackoff        time.Duration
	MaxBackoff            time.Duration
	MaxUnschedulableDelay time.Duration
	// Now is the clock (tests).
	Now func() time.Time
	// GroupKey, when set, returns the scheduling group of a pod ("" for none) and the time
	// that orders its group: pods of one group then leave activeQ one after another, groups
	// in the order of their times (then names), so two gangs are never placed interleaved
	// (docs/scheduler.md, "Gang scheduling").
	GroupKey func(*v1.Pod) (group string, since time.Time)
}

// Queue is the scheduling queue. It is safe for concurrent use.
type Queue struct {
	mu   sync.Mutex
	cond *sync.Cond
	opts Options

	active   *podHeap
	backoff  *podHeap
	unsched  map[types.UID]*QueuedPodInfo
	inFlight map[types.UID]bool
	// moveCycle counts moves of unschedulable pods; a pod that fails during a cycle in
	// which a move happened goes to backoffQ instead of the pool, so the event that
	// might have helped it is not lost.
	moveCycle      int64
	schedCycle     int64
	podCycle       map[types.UID]int64
	closed         bool
	nominated      map[string][]*framework.PodInfo
	nominatedNodes map[types.UID]string
	// anyNominated is len(nominatedNodes) > 0, readable without mu: the Filter loop asks
	// NominatedPodsForNode for every node it evaluates, and taking mu for each (a lock the
	// informers' adds and the loop's pops also take, bouncing between the cores) was about
	// 7% of the scheduler's CPU at 5000 nodes while nothing was nominated.
	anyNominated atomic.Bool
}

// New returns an empty queue.
func New(opts Options) *Queue {
	if opts.InitialBackoff == 0 {
		opts.InitialBackoff = DefaultInitialBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.MaxUnschedulableDelay == 0 {
		opts.MaxUnschedulableDelay = DefaultMaxUnschedulableDelay
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	q := &Queue{
		opts:           opts,
		unsched:        map[types.UID]*QueuedPodInfo{},
		inFlight:       map[types.UID]bool{},
		podCycle:       map[types.UID]int64{},
		nominated:      map[string][]*framework.PodInfo{},
		nominatedNodes: map[types.UID]string{},
	}
	q.cond = sync.NewCond(&q.mu)
	q.active = &podHeap{index: map[types.UID]int{}, less: activeLess}
	q.backoff = &podHeap{index: map[types.UID]int{}, less: func(a, b *QueuedPodInfo) bool {
		return q.backoffExpiry(a).Before(q.backoffExpiry(b))
	}}
	return q
}

// newQueued is a pod entering the queue, with its group's order key.
func (q *Queue) newQueued(pod *v1.Pod, now time.Time) *QueuedPodInfo {
	qp := &QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), Timestamp: now, Created: now}
	if q.opts.GroupKey != nil {
		qp.group, qp.groupTime = q.opts.GroupKey(pod)
	}
	return qp
}

// activeLess orders activeQ by spec.priority, then by group (a gang's members together,
// groups by their time, then name; a pod without a group counts as a group of its own
// created with it), then by creation time (metadata has second granularity), then by when
// the pod entered the queue. Each step compares one key, so the order is a strict weak
// order the heap can keep.
func activeLess(a, b *QueuedPodInfo) bool {
	pa, pb := framework.PodPriority(a.Pod), framework.PodPriority(b.Pod)
	if pa != pb {
		return pa > pb
	}
	ga, gb := a.groupTime, b.groupTime
	if a.group == "" {
		ga = a.Pod.CreationTimestamp.Time
	}
	if b.group == "" {
		gb = b.Pod.CreationTimestamp.Time
	}
	if !ga.Equal(gb) {
		return ga.Before(gb)
	}
	if a.group != b.group {
		return a.group < b.group
	}
	ca, cb := a.Pod.CreationTimestamp.Time, b.Pod.CreationTimestamp.Time
	if !ca.Equal(cb) {
		return ca.Before(cb)
	}
	return a.Timestamp.Before(b.Timestamp)
}

// Backoff is the wait after attempts failed attempts: initial doubling, capped at max.
func Backoff(attempts int, initial, maxD time.Duration) time.Duration {
	d := initial
	for i := 1; i < attempts; i++ {
		d *= 2
		if d >= maxD {
			return maxD
		}
	}
	return min(d, maxD)
}

func (q *Queue) backoffExpiry(p *QueuedPodInfo) time.Time {
	return p.Timestamp.Add(Backoff(p.Attempts, q.opts.InitialBackoff, q.opts.MaxBackoff))
}

// Add puts a new pending pod in activeQ (or updates it where it is).
func (q *Queue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.opts.Now()
	if qp := q.find(pod.UID); qp != nil {
		qp.PodInfo = framework.NewPodInfo(pod)
		return
	}
	if q.inFlight[pod.UID] {
		return
	}
	qp := q.newQueued(pod, now)
	heap.Push(q.active, qp)
	q.updateNominatedLocked(pod)
	q.cond.Broadcast()
}

func (q *Queue) find(uid types.UID) *QueuedPodInfo {
	if i, ok := q.active.index[uid]; ok {
		return q.active.items[i]
	}
	if i, ok := q.backoff.index[uid]; ok {
		return q.backoff.items[i]
	}
	return q.unsched[uid]
}

// Update replaces a pending pod. A pod in the unschedulable pool whose spec changed is
// moved to activeQ (the change may make it fit), as upstream.
func (q *Queue) Update(old, pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.updateNominatedLocked(pod)
	if i, ok := q.active.index[pod.UID]; ok {
		q.active.items[i].PodInfo = framework.NewPodInfo(pod)
		heap.Fix(q.active, i)
		return
	}
	if i, ok := q.backoff.index[pod.UID]; ok {
		q.backoff.items[i].PodInfo = framework.NewPodInfo(pod)
		return
	}
	if qp, ok := q.unsched[pod.UID]; ok {
		qp.PodInfo = framework.NewPodInfo(pod)
		if old != nil && specChanged(old, pod) {
			delete(q.unsched, pod.UID)
			q.moveLocked(qp)
		}
		return
	}
	if q.inFlight[pod.UID] {
		return
	}
	now := q.opts.Now()
	heap.Push(q.active, q.newQueued(pod, now))
	q.cond.Broadcast()
}

func specChanged(a, b *v1.Pod) bool {
	return a.Generation != b.Generation || !maps.Equal(a.Labels, b.Labels) ||
		len(a.Spec.Tolerations) != len(b.Spec.Tolerations) || len(a.Spec.SchedulingGates) != len(b.Spec.SchedulingGates)
}

// Delete removes a pod wherever it is. A pod in flight (being scheduled or bound) is
// not returned to the queue when its attempt ends.
func (q *Queue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleteNominatedLocked(pod.UID)
	delete(q.podCycle, pod.UID)
	if i, ok := q.active.index[pod.UID]; ok {
		heap.Remove(q.active, i)
	}
	if i, ok := q.backoff.index[pod.UID]; ok {
		heap.Remove(q.backoff, i)
	}
	delete(q.unsched, pod.UID)
}

// Pop blocks until a pod is in activeQ (or the queue is closed: nil).
func (q *Queue) Pop() *QueuedPodInfo { return q.PopContext(context.Background()) }

// PopContext is Pop that also returns nil when ctx ends. The queue stays open: a
// scheduler that lost its leadership stops popping, and the pods stay queued for its
// next term.
func (q *Queue) PopContext(ctx context.Context) *QueuedPodInfo {
	if ctx.Done() != nil {
		// Wake the wait below when ctx ends; the lock orders the wake-up after Wait.
		stop := context.AfterFunc(ctx, func() {
			q.mu.Lock()
			q.cond.Broadcast()
			q.mu.Unlock()
		})
		defer stop()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed && ctx.Err() == nil {
		q.cond.Wait()
	}
	if q.closed || ctx.Err() != nil {
		return nil
	}
	qp := heap.Pop(q.active).(*QueuedPodInfo)
	qp.Attempts++
	if qp.InitialAttemptTimestamp.IsZero() {
		qp.InitialAttemptTimestamp = q.opts.Now()
	}
	q.schedCycle++
	q.podCycle[qp.Pod.UID] = q.moveCycle
	q.inFlight[qp.Pod.UID] = true
	return qp
}

// Done tells the queue the pod's scheduling cycle ended (bound, or requeued).
func (q *Queue) Done(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, uid)
	delete(q.podCycle, uid)
}

// AddUnschedulable returns a popped pod to the queue after a failed attempt. A pod
// rejected by plugins (unschedulable) goes to the pool, unless a move request came in
// during its cycle; a pod that failed with an error goes to backoffQ.
func (q *Queue) AddUnschedulable(qp *QueuedPodInfo, unschedulable bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	cycle, inflight := q.podCycle[qp.Pod.UID]
	delete(q.inFlight, qp.Pod.UID)
	delete(q.podCycle, qp.Pod.UID)
	if !inflight {
		// Deleted while in flight: drop it.
		return
	}
	qp.Timestamp = q.opts.Now()
	if !unschedulable || q.moveCycle > cycle {
		heap.Push(q.backoff, qp)
		return
	}
	q.unsched[qp.Pod.UID] = qp
}

// Requeue returns a popped pod to activeQ at once (for example when its binding failed).
func (q *Queue) Requeue(qp *QueuedPodInfo) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.podCycle[qp.Pod.UID]; !ok {
		delete(q.inFlight, qp.Pod.UID)
		return
	}
	delete(q.inFlight, qp.Pod.UID)
	delete(q.podCycle, qp.Pod.UID)
	qp.Timestamp = q.opts.Now()
	heap.Push(q.backoff, qp)
}

// MoveAllToActiveOrBackoff moves unschedulable pods (those pred selects; nil: all) out
// of the pool: to backoffQ while their back-off lasts, else to activeQ. Called on
// cluster events that may make pods schedulable.
func (q *Queue) MoveAllToActiveOrBackoff(pred func(*QueuedPodInfo) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for uid, qp := range q.unsched {
		if pred != nil && !pred(qp) {
			continue
		}
		delete(q.unsched, uid)
		q.moveLocked(qp)
	}
	q.moveCycle++
}

// Activate moves the pods pred selects from the unschedulable pool and backoffQ straight
// to activeQ, back-off or not: a gang member waits at Permit for the others, and they must
// not sit out a back-off longer than its wait (upstream's PodsToActivate).
func (q *Queue) Activate(pred func(*QueuedPodInfo) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	moved := false
	for uid, qp := range q.unsched {
		if pred(qp) {
			delete(q.unsched, uid)
			heap.Push(q.active, qp)
			moved = true
		}
	}
	for i := 0; i < len(q.backoff.items); {
		qp := q.backoff.items[i]
		if !pred(qp) {
			i++
			continue
		}
		heap.Remove(q.backoff, i)
		heap.Push(q.active, qp)
		moved = true
	}
	if moved {
		q.moveCycle++
		q.cond.Broadcast()
	}
}

func (q *Queue) moveLocked(qp *QueuedPodInfo) {
	if q.backoffExpiry(qp).After(q.opts.Now()) {
		heap.Push(q.backoff, qp)
		return
	}
	heap.Push(q.active, qp)
	q.cond.Broadcast()
}

// FlushBackoffCompleted moves pods whose back-off ended to activeQ.
func (q *Queue) FlushBackoffCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.opts.Now()
	moved := false
	for q.backoff.Len() > 0 {
		qp := q.backoff.items[0]
		if q.backoffExpiry(qp).After(now) {
			break
		}
		heap.Pop(q.backoff)
		heap.Push(q.active, qp)
		moved = true
	}
	if moved {
		q.cond.Broadcast()
	}
}

// FlushUnschedulableLeftover moves pods that stayed in the pool longer than
// MaxUnschedulableDelay.
func (q *Queue) FlushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.opts.Now()
	for uid, qp := range q.unsched {
		if now.Sub(qp.Timestamp) >= q.opts.MaxUnschedulableDelay {
			delete(q.unsched, uid)
			q.moveLocked(qp)
		}
	}
}

// Run flushes backoffQ every second and the pool every 30 seconds until stop closes,
// then closes the queue (Pop returns nil).
func (q *Queue) Run(stop <-chan struct{}) {
	t1 := time.NewTicker(time.Second)
	t30 := time.NewTicker(30 * time.Second)
	defer t1.Stop()
	defer t30.Stop()
	for {
		select {
		case <-stop:
			q.Close()
			return
		case <-t1.C:
			q.FlushBackoffCompleted()
		case <-t30.C:
			q.FlushUnschedulableLeftover()
		}
	}
}

// Close wakes Pop with nil.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// Lens returns the sizes of activeQ, backoffQ and the unschedulable pool.
func (q *Queue) Lens() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unsched)
}

// Where tells which part of the queue holds a pod: "active", "backoff",
// "unschedulable", "inflight" or "".
func (q *Queue) Where(uid types.UID) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case has(q.active.index, uid):
		return "active"
	case has(q.backoff.index, uid):
		return "backoff"
	case q.unsched[uid] != nil:
		return "unschedulable"
	case q.inFlight[uid]:
		return "inflight"
	}
	return ""
}

func has(m map[types.UID]int, uid types.UID) bool { _, ok := m[uid]; return ok }

// AddNominated records that pod is nominated to node (status.nominatedNodeName).
func (q *Queue) AddNominated(pod *v1.Pod, node string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleteNominatedLocked(pod.UID)
	if node == "" {
		return
	}
	q.nominatedNodes[pod.UID] = node
	q.nominated[node] = append(q.nominated[node], framework.NewPodInfo(pod))
	q.anyNominated.Store(true)
}

// DeleteNominated forgets a pod's nomination.
func (q *Queue) DeleteNominated(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleteNominatedLocked(pod.UID)
}

func (q *Queue) updateNominatedLocked(pod *v1.Pod) {
	nn := pod.Status.NominatedNodeName
	if nn == "" {
		if _, ok := q.nominatedNodes[pod.UID]; ok && pod.Spec.NodeName != "" {
			q.deleteNominatedLocked(pod.UID)
		}
		return
	}
	if q.nominatedNodes[pod.UID] == nn {
		return
	}
	q.deleteNominatedLocked(pod.UID)
	q.nominatedNodes[pod.UID] = nn
	q.nominated[nn] = append(q.nominated[nn], framework.NewPodInfo(pod))
	q.anyNominated.Store(true)
}

func (q *Queue) deleteNominatedLocked(uid types.UID) {
	node, ok := q.nominatedNodes[uid]
	if !ok {
		return
	}
	delete(q.nominatedNodes, uid)
	list := q.nominated[node]
	for i, pi := range list {
		if pi.Pod.UID == uid {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(q.nominated, node)
	} else {
		q.nominated[node] = list
	}
	q.anyNominated.Store(len(q.nominatedNodes) > 0)
}

// AnyNominated reports whether any pod is nominated to any node, without the lock.
func (q *Queue) AnyNominated() bool { return q.anyNominated.Load() }

// NominatedPodsForNode implements framework.PodNominator.
func (q *Queue) NominatedPodsForNode(node string) []*framework.PodInfo {
	if !q.anyNominated.Load() {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.nominated) == 0 {
		return nil
	}
	list := q.nominated[node]
	if len(list) == 0 {
		return nil
	}
	return append([]*framework.PodInfo(nil), list...)
}

// podHeap is a heap of queued pods with an index by UID.
type podHeap struct {
	items []*QueuedPodInfo
	index map[types.UID]int
	less  func(a, b *QueuedPodInfo) bool
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i].Pod.UID] = i
	h.index[h.items[j].Pod.UID] = j
}
func (h *podHeap) Push(x any) {
	qp := x.(*QueuedPodInfo)
	if _, dup := h.index[qp.Pod.UID]; dup {
		return
	}
	h.index[qp.Pod.UID] = len(h.items)
	h.items = append(h.items, qp)
}
func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	qp := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	delete(h.index, qp.Pod.UID)
	return qp
}
