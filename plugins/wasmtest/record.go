package wasmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
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
	// Object is context for the admission replay (record_admission.go).
	Object *ObjectRecord `json:"object,omitempty"`
	// Admission is one admitted write, replayed as an admission request.
	Admission *AdmissionRecord `json:"admission,omitempty"`
}

// Scheduling reports whether the record is part of the scheduling history.
func (r *Record) Scheduling() bool {
	return r.Node != nil || r.NodeDeleted != "" || r.Pod != nil || r.PodDeleted != "" || r.Cycle != nil
}

// AdmissionPart reports whether the record is part of the admission history.
func (r *Record) AdmissionPart() bool { return r.Object != nil || r.Admission != nil }

// Decision is a pod as it was before binding and the node the cluster bound it to.
type Decision struct {
	Pod  *v1.Pod `json:"pod"`
	Node string  `json:"node"`
}

// RecordOptions bound a recording.
type RecordOptions struct {
	// Cycles stops the recording after this many decisions (0: no limit).
	Cycles int
	// NoScheduling leaves nodes, pods and decisions out (an admission-only recording).
	NoScheduling bool
	// Admission names the resources (pods, deployments, deployments.apps) whose writes are
	// recorded as admission requests, with namespaces as context; Dynamic must be set.
	Admission []string
	Dynamic   dynamic.Interface
	// Requests stops the recording after this many admission requests (0: no limit).
	// With Cycles too, the first limit reached stops it.
	Requests int
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
	reqs   int
	maxReq int
	done   chan struct{}
	once   sync.Once
}

func (r *recorder) write(rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil || r.stopped() {
		return
	}
	if err := r.enc.Encode(rec); err != nil {
		r.err = err
		r.once.Do(func() { close(r.done) })
		return
	}
	if rec.Cycle != nil {
		r.cycles++
	}
	if rec.Admission != nil {
		r.reqs++
	}
	if r.stopped() {
		r.once.Do(func() { close(r.done) })
	}
}

// stopped reports whether a limit was reached.
func (r *recorder) stopped() bool {
	return (r.max > 0 && r.cycles >= r.max) || (r.maxReq > 0 && r.reqs >= r.maxReq)
}

// RecordCluster watches nodes and pods (unless o.NoScheduling) and o.Admission's
// resources through the API server and writes a Record per change to w until ctx ends or
// a limit is reached. It returns the number of decisions recorded (RecordStats also
// counts admission requests).
func RecordCluster(ctx context.Context, client kubernetes.Interface, w io.Writer, o RecordOptions) (int, error) {
	st, err := RecordClusterStats(ctx, client, w, o)
	return st.Cycles, err
}

// RecordStats counts what a recording holds.
type RecordStats struct {
	Cycles   int
	Requests int
}

// RecordClusterStats is RecordCluster, counting both kinds of records.
func RecordClusterStats(ctx context.Context, client kubernetes.Interface, w io.Writer, o RecordOptions) (RecordStats, error) {
	if o.NoScheduling && len(o.Admission) == 0 {
		return RecordStats{}, fmt.Errorf("record: nothing to record: no scheduling and no admission resources")
	}
	var watches []*admissionWatch
	if len(o.Admission) > 0 {
		if o.Dynamic == nil {
			return RecordStats{}, fmt.Errorf("record: admission resources need RecordOptions.Dynamic")
		}
		var err error
		if watches, err = resolveResources(client, o.Admission); err != nil {
			return RecordStats{}, err
		}
	}
	bw := bufio.NewWriter(w)
	r := &recorder{enc: json.NewEncoder(bw), max: o.Cycles, maxReq: o.Requests, done: make(chan struct{})}
	if !o.NoScheduling {
		if err := startScheduling(ctx, client, r); err != nil {
			return RecordStats{}, err
		}
	}
	if len(watches) > 0 {
		if err := startAdmission(ctx, o.Dynamic, r, watches); err != nil {
			return RecordStats{}, err
		}
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
	st := RecordStats{Cycles: r.cycles, Requests: r.reqs}
	if r.err != nil {
		return st, r.err
	}
	r.err = io.ErrClosedPipe // later events are dropped
	return st, bw.Flush()
}

// startScheduling starts the node and pod informers and waits for their lists.
func startScheduling(ctx context.Context, client kubernetes.Interface, r *recorder) error {
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
		return err
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
		return err
	}
	// Nodes first, so that the pods already bound find theirs in a replay.
	go nodes.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced) {
		return fmt.Errorf("record: the node list did not sync: %w", ctx.Err())
	}
	go pods.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		return fmt.Errorf("record: the pod list did not sync: %w", ctx.Err())
	}
	return nil
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
