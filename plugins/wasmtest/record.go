package wasmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Record is one line of a recording (JSON Lines): exactly one field is set. A recording
// is the cluster's scheduling history as the scheduler saw it: the nodes, the pods already
// bound, and each scheduling decision (the pod before it was bound, and the node it went
// to), in the order they happened, so that a replay rebuilds the same state before each
// decision.
type Record struct {
	// Node is a node as added or updated.
	Node *v1.Node `json:"node,omitempty"`
	// NodeDeleted is the name of a deleted node.
	NodeDeleted string `json:"nodeDeleted,omitempty"`
	// Pod is a pod already bound (when the recording began, or bound without a
	// recorded decision); it counts on its node.
	Pod *v1.Pod `json:"pod,omitempty"`
	// PodDeleted is namespace/name of a deleted bound pod.
	PodDeleted string `json:"podDeleted,omitempty"`
	// Cycle is one scheduling decision.
	Cycle *Decision `json:"cycle,omitempty"`
}

// Decision is a pod as it was before binding and the node the cluster bound it to.
type Decision struct {
	Pod  *v1.Pod `json:"pod"`
	Node string  `json:"node"`
}

// RecordOptions bound a recording.
type RecordOptions struct {
	// Cycles stops the recording after this many decisions (0: until ctx ends).
	Cycles int
	// Ready, when set, is closed once the recording sees the cluster (nodes and pods
	// listed): decisions from then on are recorded.
	Ready chan<- struct{}
}

// recorder writes a cluster's scheduling history as it happens.
type recorder struct {
	mu     sync.Mutex
	enc    *json.Encoder
	err    error
	cycles int
	max    int
	done   chan struct{}
	once   sync.Once
}

func (r *recorder) write(rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil || (r.max > 0 && r.cycles >= r.max) {
		return
	}
	if err := r.enc.Encode(rec); err != nil {
		r.err = err
		r.once.Do(func() { close(r.done) })
		return
	}
	if rec.Cycle != nil {
		r.cycles++
		if r.max > 0 && r.cycles >= r.max {
			r.once.Do(func() { close(r.done) })
		}
	}
}

// RecordCluster watches nodes and pods through the API server and writes a Record per
// change to w until ctx ends or o.Cycles decisions were written. It returns the number of
// decisions recorded.
func RecordCluster(ctx context.Context, client kubernetes.Interface, w io.Writer, o RecordOptions) (int, error) {
	bw := bufio.NewWriter(w)
	r := &recorder{enc: json.NewEncoder(bw), max: o.Cycles, done: make(chan struct{})}
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes := factory.Core().V1().Nodes().Informer()
	pods := factory.Core().V1().Pods().Informer()
	_, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.write(Record{Node: slimNode(obj.(*v1.Node))}) },
		UpdateFunc: func(_, obj any) { r.write(Record{Node: slimNode(obj.(*v1.Node))}) },
		DeleteFunc: func(obj any) {
			if n, ok := obj.(*v1.Node); ok {
				r.write(Record{NodeDeleted: n.Name})
			} else if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				if n, ok := t.Obj.(*v1.Node); ok {
					r.write(Record{NodeDeleted: n.Name})
				}
			}
		},
	})
	if err != nil {
		return 0, err
	}
	_, err = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p := obj.(*v1.Pod); p.Spec.NodeName != "" {
				r.write(Record{Pod: slimPod(p)})
			}
		},
		UpdateFunc: func(old, obj any) {
			o, p := old.(*v1.Pod), obj.(*v1.Pod)
			if o.Spec.NodeName == "" && p.Spec.NodeName != "" {
				r.write(Record{Cycle: &Decision{Pod: slimPod(o), Node: p.Spec.NodeName}})
			}
		},
		DeleteFunc: func(obj any) {
			p, ok := obj.(*v1.Pod)
			if t, isT := obj.(cache.DeletedFinalStateUnknown); isT {
				p, ok = t.Obj.(*v1.Pod)
			}
			if ok && p.Spec.NodeName != "" {
				r.write(Record{PodDeleted: p.Namespace + "/" + p.Name})
			}
		},
	})
	if err != nil {
		return 0, err
	}
	// Nodes first, so that the pods already bound find theirs in a replay.
	go nodes.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced) {
		return 0, fmt.Errorf("record: the node list did not sync: %w", ctx.Err())
	}
	go pods.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		return 0, fmt.Errorf("record: the pod list did not sync: %w", ctx.Err())
	}
	if o.Ready != nil {
		close(o.Ready)
	}
	select {
	case <-ctx.Done():
	case <-r.done:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.cycles, r.err
	}
	r.err = io.ErrClosedPipe // later events are dropped
	return r.cycles, bw.Flush()
}

func slimNode(n *v1.Node) *v1.Node {
	n = n.DeepCopy()
	n.ManagedFields = nil
	n.Status.Images = nil
	return n
}

func slimPod(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	p.ManagedFields = nil
	return p
}
