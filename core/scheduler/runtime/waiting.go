package runtime

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// waitingPods are the pods of one profile held at Permit, by UID.
type waitingPods struct {
	mu   sync.RWMutex
	pods map[types.UID]*waitingPod
}

func (w *waitingPods) add(wp *waitingPod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods == nil {
		w.pods = map[types.UID]*waitingPod{}
	}
	w.pods[wp.pod.UID] = wp
}

func (w *waitingPods) remove(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, uid)
}

func (w *waitingPods) get(uid types.UID) *waitingPod {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.pods[uid]
}

func (w *waitingPods) list() []*waitingPod {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]*waitingPod, 0, len(w.pods))
	for _, wp := range w.pods {
		out = append(out, wp)
	}
	// By UID: callers that allow or reject a group see it in one order every time.
	sort.Slice(out, func(i, j int) bool { return out[i].pod.UID < out[j].pod.UID })
	return out
}

// waitingPod implements framework.WaitingPod: one timer per plugin that holds the pod;
// the first rejection or the last allow decides, once.
type waitingPod struct {
	pod     *v1.Pod
	node    string
	mu      sync.Mutex
	pending map[string]*time.Timer
	done    chan *framework.Status // buffered 1: the verdict
	decided bool
}

func newWaitingPod(pod *v1.Pod, node string, waits map[string]time.Duration) *waitingPod {
	wp := &waitingPod{pod: pod, node: node, pending: make(map[string]*time.Timer, len(waits)), done: make(chan *framework.Status, 1)}
	// The timers start under the lock, so a short one cannot fire into a half-built map.
	wp.mu.Lock()
	defer wp.mu.Unlock()
	for plugin, d := range waits {
		wp.pending[plugin] = time.AfterFunc(d, func() {
			wp.Reject(plugin, fmt.Sprintf("rejected due to timeout after waiting %v at plugin %s", d, plugin))
		})
	}
	return wp
}

// GetPod implements framework.WaitingPod.
func (wp *waitingPod) GetPod() *v1.Pod { return wp.pod }

// NodeName implements framework.WaitingPod.
func (wp *waitingPod) NodeName() string { return wp.node }

// GetPendingPlugins implements framework.WaitingPod.
func (wp *waitingPod) GetPendingPlugins() []string {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	out := make([]string, 0, len(wp.pending))
	for p := range wp.pending {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Allow implements framework.WaitingPod.
func (wp *waitingPod) Allow(plugin string) bool {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	t, ok := wp.pending[plugin]
	if !ok || wp.decided {
		return false
	}
	t.Stop()
	delete(wp.pending, plugin)
	if len(wp.pending) == 0 {
		wp.decided = true
		wp.done <- nil
	}
	return true
}

// Reject implements framework.WaitingPod.
func (wp *waitingPod) Reject(plugin, msg string) {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	if wp.decided {
		return
	}
	for _, t := range wp.pending {
		t.Stop()
	}
	wp.decided = true
	wp.done <- framework.NewStatus(framework.Unschedulable, msg).WithPlugin(plugin)
}

// IterateOverWaitingPods implements framework.WaitingPodHandle.
func (f *Framework) IterateOverWaitingPods(fn func(framework.WaitingPod)) {
	for _, wp := range f.waiting.list() {
		fn(wp)
	}
}

// GetWaitingPod implements framework.WaitingPodHandle.
func (f *Framework) GetWaitingPod(uid types.UID) framework.WaitingPod {
	if wp := f.waiting.get(uid); wp != nil {
		return wp
	}
	return nil
}

var _ framework.WaitingPodHandle = (*Framework)(nil)

// RunPermitPlugins runs Permit, in the scheduling cycle (so that a gang's later member
// sees the earlier ones waiting). A rejection or an Error ends it; when plugins answer
// Wait, the pod is registered as waiting (each plugin's timeout capped at
// framework.MaxPermitTimeout) and the result is Wait: the binding cycle then calls
// WaitOnPermit.
func (f *Framework) RunPermitPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) (st *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint("Permit", st, start) }()
	var waits map[string]time.Duration
	for _, p := range f.permit {
		s, d := p.Permit(ctx, state, pod, node)
		switch {
		case s.IsSuccess():
		case s.IsWait():
			if waits == nil {
				waits = map[string]time.Duration{}
			}
			waits[p.Name()] = min(max(d, 0), framework.MaxPermitTimeout)
		case s.IsRejected():
			return s.WithPlugin(p.Name())
		default:
			return pluginError("Permit", p.Name(), s)
		}
	}
	if waits != nil {
		f.waiting.add(newWaitingPod(pod, node, waits))
		return framework.NewStatus(framework.Wait)
	}
	return nil
}

// WaitOnPermit blocks until the waiting pod is allowed (nil), rejected or timed out (a
// rejection naming the plugin), or ctx ends (an Error). A pod that is not waiting returns
// nil at once.
func (f *Framework) WaitOnPermit(ctx context.Context, pod *v1.Pod) *framework.Status {
	wp := f.waiting.get(pod.UID)
	if wp == nil {
		return nil
	}
	defer f.waiting.remove(pod.UID)
	select {
	case st := <-wp.done:
		return st
	case <-ctx.Done():
		wp.Reject("", "scheduler stopping")
		return framework.AsStatus(ctx.Err())
	}
}

// RejectWaitingPods rejects every pod waiting at Permit (a profile retired by a config
// swap, or the scheduler stopping), so that their binding cycles end and they requeue.
func (f *Framework) RejectWaitingPods(msg string) {
	for _, wp := range f.waiting.list() {
		wp.Reject("", msg)
	}
}
