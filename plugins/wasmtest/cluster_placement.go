package wasmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// placements runs a scheduler plugin's rows against the cluster's nodes (real or hollow):
// the plugin is swapped into scheduler.wasmPlugins with a profile of the run's own
// (schedulerName <run>-<policy>, the plugin enabled at every point it exports, its args
// as pluginConfig), so nothing else is scheduled by it; each row's pod is created with
// that schedulerName and awaited until it is bound (pass: on one of the row's nodes) or
// reported unschedulable (fail: with the row's message), then deleted. A skip row is not
// run: a scheduler plugin is called for every pod of its profile.
func (run *clusterRun) placements(gp *GridPolicy, path string, rows []GridResult) []Result {
	var out []Result
	start := time.Now()
	profile := run.name + "-" + gp.Name
	swapped := time.Now().Truncate(time.Second)
	if err := swapInScheduler(run.o, run.original, gp, path, profile); err != nil {
		return failRows(rows, run.g, "try: "+err.Error(), time.Since(start))
	}
	for _, r := range rows {
		for _, ref := range r.Resources {
			obj, _ := run.g.find(ref, r.Kind)
			name := fmt.Sprintf("%s / %s %s: %s (cluster)", r.Policy, obj.kind, ref, r.Result)
			t := time.Now()
			switch {
			case r.Result == "skip":
				out = append(out, Result{Name: name, Skipped: true, Diff: []string{"a scheduler plugin is called for every pod of its profile: a skip row is not run"}})
				continue
			case obj.kind != "Pod":
				out = append(out, Result{Name: name, Diff: []string{"a scheduler plugin's row places pods: " + ref + " is a " + obj.kind}})
				continue
			case r.Operation == "UPDATE":
				out = append(out, Result{Name: name, Diff: []string{"a placement is the pod's creation: operation UPDATE does not apply"}})
				continue
			case r.Result == "warn":
				out = append(out, Result{Name: name, Diff: []string{"a placement is pass (bound) or fail (unschedulable), not warn"}})
				continue
			}
			diff := run.assertPlacement(&r, obj, profile, swapped)
			out = append(out, Result{Name: name, Passed: len(diff) == 0, Diff: diff, Duration: time.Since(t)})
		}
	}
	return out
}

// assertPlacement creates the pod under the run's profile, waits for the scheduler's
// verdict, compares it with the row and deletes the pod.
func (run *clusterRun) assertPlacement(r *GridResult, obj *gridObject, profile string, swapped time.Time) []string {
	u, ri, err := run.object(obj)
	if err != nil {
		return []string{"try: " + err.Error()}
	}
	if err := unstructured.SetNestedField(u.Object, profile, "spec", "schedulerName"); err != nil {
		return []string{err.Error()}
	}
	c, cancel := context.WithTimeout(run.ctx, run.o.Timeout)
	defer cancel()
	made, err := ri.Create(c, u, metav1.CreateOptions{})
	if err != nil {
		return []string{"apply: " + err.Error()}
	}
	defer func() { _ = deleteAndWait(run.ctx, run.dyn, run.o, made) }()
	got, node, message := "", "", ""
	for got == "" {
		pod, err := run.cs.CoreV1().Pods(made.GetNamespace()).Get(c, made.GetName(), metav1.GetOptions{})
		if err == nil {
			if pod.Spec.NodeName != "" {
				got, node = "pass", pod.Spec.NodeName
				break
			}
			for _, cond := range pod.Status.Conditions {
				if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable {
					got, message = "fail", cond.Message
				}
			}
		}
		if got != "" {
			break
		}
		if why := run.schedulerRefused(c, swapped); why != "" {
			return []string{"try: the scheduler did not load the plugin: " + why}
		}
		select {
		case <-c.Done():
			return []string{fmt.Sprintf("the pod was neither bound nor reported unschedulable within %s (does the cluster run a scheduler that watches %s?)", run.o.Timeout, run.o.ServerConfig)}
		case <-time.After(100 * time.Millisecond):
		}
	}
	var diff []string
	switch {
	case got != r.Result && got == "pass":
		diff = append(diff, fmt.Sprintf("want fail (unschedulable), got bound to node %s", node))
	case got != r.Result:
		diff = append(diff, fmt.Sprintf("want pass, got unschedulable: %q", message))
	case got == "pass" && len(r.Nodes) > 0 && !slices.Contains(r.Nodes, node):
		diff = append(diff, fmt.Sprintf("want a node of [%s], got node %s", strings.Join(r.Nodes, " "), node))
	case got == "fail" && r.Message != "" && !strings.Contains(message, r.Message):
		diff = append(diff, fmt.Sprintf("want a message containing %q, got %q", r.Message, message))
	}
	return diff
}

// schedulerRefused is the message of a FailedConfigReload Event the scheduler reported
// since the swap ("" when none).
func (run *clusterRun) schedulerRefused(c context.Context, since time.Time) string {
	evs, err := run.cs.CoreV1().Events("kube-system").List(c, metav1.ListOptions{FieldSelector: "reason=FailedConfigReload"})
	if err != nil {
		return ""
	}
	for _, e := range evs.Items {
		seen := e.CreationTimestamp.Time
		for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time} {
			if t.After(seen) {
				seen = t
			}
		}
		if e.Reason == "FailedConfigReload" && !seen.Before(since) {
			return e.Message
		}
	}
	return ""
}

// swapInScheduler writes the server config with the plugin added to scheduler.wasmPlugins
// and a profile of the run's own that enables it (multiPoint) with its args. A config
// without profiles gets the default profile written out first, so that adding one does
// not take the default scheduler's away.
func swapInScheduler(o ClusterOptions, original []byte, gp *GridPolicy, path, profile string) error {
	var config map[string]any
	if err := yaml.Unmarshal(original, &config); err != nil {
		return fmt.Errorf("%s: %w", o.ServerConfig, err)
	}
	if config == nil {
		config = map[string]any{}
	}
	sched, _ := config["scheduler"].(map[string]any)
	if sched == nil {
		sched = map[string]any{}
	}
	plugins, _ := sched["wasmPlugins"].([]any)
	profiles, _ := sched["profiles"].([]any)
	if len(profiles) == 0 {
		profiles = []any{map[string]any{"schedulerName": v1.DefaultSchedulerName}}
	}
	p := map[string]any{"schedulerName": profile,
		"plugins": map[string]any{"multiPoint": map[string]any{"enabled": []any{map[string]any{"name": gp.Name}}}}}
	if len(gp.Args) > 0 {
		var args any
		if err := json.Unmarshal(gp.Args, &args); err != nil {
			return fmt.Errorf("policy %s: args: %w", gp.Name, err)
		}
		p["pluginConfig"] = []any{map[string]any{"name": gp.Name, "args": args}}
	}
	sched["wasmPlugins"] = append(slices.Clone(plugins), map[string]any{"name": gp.Name, "path": path})
	sched["profiles"] = append(slices.Clone(profiles), p)
	config["scheduler"] = sched
	b, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	return os.WriteFile(o.ServerConfig, b, 0o600)
}
