package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// The shapes of `bench scheduler --shape`, after upstream's scheduler_perf workloads.
const (
	// shapePlain: --pods pods created at once and measured (the bench's first form).
	shapePlain = "plain"
	// shapeBasic is SchedulingBasic: --initial-pods pods (default 1000) created and bound
	// first, unmeasured, then --pods (default 10,000; 50,000 is upstream's large variant)
	// measured.
	shapeBasic = "basic"
	// shapeGang: --groups PodGroups (gang, minCount --group-size) and their members, all
	// measured; the result says how many groups were placed whole, partly or not at all.
	shapeGang = "gang"
)

// benchShape is what a shape makes of the pods.
type benchShape struct {
	name      string
	groupSize int // gang: members per group; 0 otherwise
}

// podFor is pod i of the measured phase.
func (s benchShape) podFor(i int) *v1.Pod {
	p := benchPod(i)
	if s.groupSize > 0 {
		g := groupName(i / s.groupSize)
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g}
	}
	return p
}

func groupName(g int) string { return fmt.Sprintf("bench-group-%d", g) }

// createGroups creates the gang shape's PodGroups before any member.
func createGroups(ctx context.Context, client kubernetes.Interface, groups, size, clients int) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range max(1, clients) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				g := int(next.Add(1) - 1)
				if g >= groups || ctx.Err() != nil {
					return
				}
				pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: groupName(g)},
					Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
						Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(size)}}}}
				if _, err := client.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{}); err != nil {
					first.CompareAndSwap(nil, fmt.Errorf("create PodGroup %s: %w", pg.Name, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if v := first.Load(); v != nil {
		return v.(error)
	}
	return nil
}

// createInitialPods creates n pods (init-<i>) and waits until every one is bound: the
// cluster's state before the measured phase (SchedulingBasic's initial pods).
func createInitialPods(ctx context.Context, client kubernetes.Interface, n, clients int, timeout time.Duration) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range max(1, clients) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				p := benchPod(i)
				p.Name = fmt.Sprintf("init-%d", i)
				if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
					first.CompareAndSwap(nil, fmt.Errorf("create pod %s: %w", p.Name, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if v := first.Load(); v != nil {
		return v.(error)
	}
	deadline := time.Now().Add(timeout)
	for {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=bench", FieldSelector: "spec.nodeName!="})
		if err != nil {
			return err
		}
		if len(list.Items) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("initial pods: %d of %d bound after %s", len(list.Items), n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// gangOutcome counts the groups bound whole, in part (a broken all-or-nothing) and not
// at all, from the pods' binding times.
func gangOutcome(boundAt []time.Time, size int) (whole, partial, none int) {
	for g := 0; g*size < len(boundAt); g++ {
		n := 0
		for i := g * size; i < min(len(boundAt), (g+1)*size); i++ {
			if !boundAt[i].IsZero() {
				n++
			}
		}
		switch {
		case n == size:
			whole++
		case n == 0:
			none++
		default:
			partial++
		}
	}
	return whole, partial, none
}

// withBatching returns the config file content with every profile's batching set to on
// (a profile named default-scheduler is added to a config without profiles), written
// beside the original so that its relative wasm paths still resolve; remove it after.
func withBatching(configFile string, data []byte, on bool) (string, []byte, func(), error) {
	doc := map[string]any{}
	if len(data) > 0 {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return "", nil, nil, fmt.Errorf("--config: %w", err)
		}
	}
	sched, _ := doc["scheduler"].(map[string]any)
	if sched == nil {
		sched = map[string]any{}
		doc["scheduler"] = sched
	}
	profiles, _ := sched["profiles"].([]any)
	if len(profiles) == 0 {
		profiles = []any{map[string]any{"schedulerName": "default-scheduler"}}
	}
	for _, p := range profiles {
		if m, ok := p.(map[string]any); ok {
			m["batching"] = on
		}
	}
	sched["profiles"] = profiles
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", nil, nil, err
	}
	if configFile == "" {
		return "", out, func() {}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(configFile), ".bench-batching-*.yaml")
	if err != nil {
		return "", nil, nil, err
	}
	name := f.Name()
	if _, err := f.Write(out); err != nil {
		f.Close()
		os.Remove(name)
		return "", nil, nil, err
	}
	f.Close()
	return name, out, func() { os.Remove(name) }, nil
}

// batchAttempts reads scheduler_batch_attempts_total by result from the scheduler's
// registry (initial pods included).
func batchAttempts(g prometheus.Gatherer) map[string]float64 {
	mfs, err := g.Gather()
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "scheduler_batch_attempts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
