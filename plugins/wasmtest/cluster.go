package wasmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// ClusterOptions say where a grid runs against a live cluster.
type ClusterOptions struct {
	// Config is the REST config of the cluster (from a kubeconfig).
	Config *rest.Config
	// ServerConfig is the config file of the running API server, on this machine: each
	// policy is swapped in by adding it to admission.policies there (the file tier's hot
	// swap), and the file is restored afterwards.
	ServerConfig string
	// Timeout bounds each step: the swap, each apply, each cleanup (default 30s).
	Timeout time.Duration
}

// warnings collects the warning headers of the cluster's answers.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// RunGridInCluster runs the grid against a live cluster, as Chainsaw runs a test: for each
// policy, try (swap it into the API server's config and wait for the reload), assert
// (create each of its resources in a namespace of the run, and compare the denial, warnings
// and stored object with the result), cleanup (delete what was created, restore the
// config and wait for that reload), every step bounded by o.Timeout. A step that fails or
// times out fails the rows it concerns; cleanup always runs.
func RunGridInCluster(ctx context.Context, g *Grid, module string, o ClusterOptions) ([]Result, error) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.ServerConfig == "" {
		return nil, errors.New("--server-config: required with --cluster: the config file of the running API server, where each policy is swapped in")
	}
	original, err := os.ReadFile(o.ServerConfig)
	if err != nil {
		return nil, fmt.Errorf("--server-config: %w", err)
	}
	cfg := rest.CopyConfig(o.Config)
	ws := &warnings{}
	cfg.WarningHandler = ws
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ns := fmt.Sprintf("wasmkube-test-%d", time.Now().UnixNano()%1_000_000_000)
	step, cancel := context.WithTimeout(ctx, o.Timeout)
	_, err = cs.CoreV1().Namespaces().Create(step, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("try: create namespace %s: %w", ns, err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.Timeout)
		defer cancel()
		_ = cs.CoreV1().Namespaces().Delete(c, ns, metav1.DeleteOptions{})
	}()
	var out []Result
	for _, gp := range g.Policies {
		var rows []GridResult
		for _, r := range g.Results {
			if r.Policy == gp.Name {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		path := module
		if gp.Path != "" {
			path = g.path(gp.Path)
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		// Try: the policy swapped in.
		start := time.Now()
		swapErr := swapIn(ctx, cs, o, original, g, &gp, path)
		if swapErr != nil {
			for _, r := range rows {
				for _, ref := range r.Resources {
					out = append(out, Result{Name: fmt.Sprintf("%s / %s: %s (cluster)", r.Policy, ref, r.Result), Diff: []string{"try: " + swapErr.Error()}, Duration: time.Since(start)})
				}
			}
		} else {
			// Assert.
			var created []*unstructured.Unstructured
			for _, r := range rows {
				for _, ref := range r.Resources {
					obj, _ := g.find(ref, r.Kind)
					t := time.Now()
					diff, made := assertInCluster(ctx, dyn, ws, o, g, &r, obj, ns)
					if made != nil {
						created = append(created, made)
					}
					out = append(out, Result{Name: fmt.Sprintf("%s / %s %s: %s (cluster)", r.Policy, obj.kind, ref, r.Result), Passed: len(diff) == 0, Diff: diff, Duration: time.Since(t)})
				}
			}
			// Cleanup: what this policy's rows created.
			for _, u := range created {
				if err := deleteAndWait(ctx, dyn, o, u); err != nil {
					out = append(out, Result{Name: fmt.Sprintf("%s: cleanup of %s %s", gp.Name, u.GetKind(), u.GetName()), Diff: []string{"cleanup: " + err.Error()}})
				}
			}
		}
		if err := restore(ctx, cs, o, original); err != nil {
			return out, fmt.Errorf("cleanup: restoring %s: %w", o.ServerConfig, err)
		}
	}
	return out, nil
}

// policyNames lists admission.policies[].name of a server config.
func policyNames(config map[string]any) []string {
	adm, _ := config["admission"].(map[string]any)
	ps, _ := adm["policies"].([]any)
	var names []string
	for _, p := range ps {
		if m, ok := p.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	return names
}

// swapIn writes the server config with the policy added to admission.policies (its
// kinds and operations as the rules) and waits until the server reports it in force.
func swapIn(ctx context.Context, cs kubernetes.Interface, o ClusterOptions, original []byte, g *Grid, gp *GridPolicy, path string) error {
	var config map[string]any
	if err := yaml.Unmarshal(original, &config); err != nil {
		return fmt.Errorf("%s: %w", o.ServerConfig, err)
	}
	if config == nil {
		config = map[string]any{}
	}
	adm, _ := config["admission"].(map[string]any)
	if adm == nil {
		adm = map[string]any{}
	}
	ps, _ := adm["policies"].([]any)
	resources := []string{"*"}
	if len(gp.Kinds) > 0 {
		resources = nil
		for _, k := range gp.Kinds {
			gvr, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: k})
			resources = append(resources, gvr.Resource)
		}
	}
	ops := gp.Operations
	if len(ops) == 0 {
		ops = []string{"CREATE", "UPDATE"}
	}
	p := map[string]any{"name": gp.Name, "path": path,
		"rules": []any{map[string]any{"apiGroups": []string{"*"}, "apiVersions": []string{"*"}, "resources": resources, "operations": ops}}}
	if len(gp.Args) > 0 {
		var args any
		if err := json.Unmarshal(gp.Args, &args); err != nil {
			return fmt.Errorf("policy %s: args: %w", gp.Name, err)
		}
		p["args"] = args
	}
	adm["policies"] = append(slices.Clone(ps), p)
	config["admission"] = adm
	b, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	return writeAndWait(ctx, cs, o, b, policyNames(config))
}

func restore(ctx context.Context, cs kubernetes.Interface, o ClusterOptions, original []byte) error {
	var config map[string]any
	_ = yaml.Unmarshal(original, &config)
	return writeAndWait(ctx, cs, o, original, policyNames(config))
}

// writeAndWait writes the config and waits for the API server's reload Event listing
// exactly want in force, or its failure Event.
func writeAndWait(ctx context.Context, cs kubernetes.Interface, o ClusterOptions, b []byte, want []string) error {
	start := time.Now().Truncate(time.Second)
	if err := os.WriteFile(o.ServerConfig, b, 0o600); err != nil {
		return err
	}
	msg := fmt.Sprintf("admission policies in force: [%s]", strings.Join(want, " "))
	c, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	for {
		evs, err := cs.CoreV1().Events("kube-system").List(c, metav1.ListOptions{})
		if err == nil {
			for _, e := range evs.Items {
				seen := e.CreationTimestamp.Time
				for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time} {
					if t.After(seen) {
						seen = t
					}
				}
				if seen.Before(start) {
					continue
				}
				switch {
				case e.Reason == "AdmissionConfigReloaded" && e.Message == msg:
					return nil
				case e.Reason == "FailedAdmissionConfigReload":
					return errors.New(e.Message)
				}
			}
		}
		select {
		case <-c.Done():
			return fmt.Errorf("the API server did not report %q within %s (is %s its config file?)", msg, o.Timeout, o.ServerConfig)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func gvrOf(obj *gridObject) schema.GroupVersionResource {
	gvk := obj.obj.GetObjectKind().GroupVersionKind()
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return gvr
}

// assertInCluster creates the resource (namespaced ones in the run's namespace) and
// compares what the cluster said with the result.
func assertInCluster(ctx context.Context, dyn dynamic.Interface, ws *warnings, o ClusterOptions, g *Grid, r *GridResult, obj *gridObject, ns string) ([]string, *unstructured.Unstructured) {
	if r.Operation != "" && r.Operation != "CREATE" {
		return []string{"operation " + r.Operation + ": checked in process only (plugin test without --cluster)"}, nil
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(obj.raw, &u.Object); err != nil {
		return []string{err.Error()}, nil
	}
	gvr := gvrOf(obj)
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if !clusterScoped[gvr.Resource] {
		u.SetNamespace(ns)
		ri = dyn.Resource(gvr).Namespace(ns)
	}
	c, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ws.take()
	made, err := ri.Create(c, u, metav1.CreateOptions{})
	warned := ws.take()
	got, message := "pass", ""
	var status *apierrors.StatusError
	switch {
	case err != nil && errors.As(err, &status) && strings.Contains(err.Error(), "admission policy "+r.Policy+" denied"):
		got, message = "fail", err.Error()
	case err != nil:
		return []string{"apply: " + err.Error()}, nil
	case len(warned) > 0:
		got, message = "warn", strings.Join(warned, "; ")
	}
	var diff []string
	// skip: the policy is not configured for the request, so the cluster allows it as if
	// the policy were not there.
	want := r.Result
	if want == "skip" {
		want = "pass"
	}
	if got != want {
		d := fmt.Sprintf("want %s, got %s", r.Result, got)
		if message != "" {
			d += fmt.Sprintf(": %q", message)
		}
		diff = append(diff, d)
	} else if r.Message != "" && !strings.Contains(message, r.Message) {
		diff = append(diff, fmt.Sprintf("want a message containing %q, got %q", r.Message, message))
	}
	if r.PatchedResource != "" && made != nil {
		objs, _ := readObjects(g.path(r.PatchedResource))
		var wantV any
		_ = json.Unmarshal(objs[0].raw, &wantV)
		if m, ok := wantV.(map[string]any); ok {
			if md, ok := m["metadata"].(map[string]any); ok {
				delete(md, "namespace") // the run's namespace replaces it
			}
		}
		b, _ := json.Marshal(made.Object)
		var gotV any
		_ = json.Unmarshal(b, &gotV)
		if d := subsetDiff("patchedResource", wantV, gotV); len(d) > 0 {
			diff = append(diff, d...)
		}
	}
	return diff, made
}

// deleteAndWait deletes an object the run created (no grace period) and waits until it
// is gone.
func deleteAndWait(ctx context.Context, dyn dynamic.Interface, o ClusterOptions, u *unstructured.Unstructured) error {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	gvr, _ := meta.UnsafeGuessKindToResource(gv.WithKind(u.GetKind()))
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if u.GetNamespace() != "" {
		ri = dyn.Resource(gvr).Namespace(u.GetNamespace())
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.Timeout)
	defer cancel()
	zero := int64(0)
	if err := ri.Delete(c, u.GetName(), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		if _, err := ri.Get(c, u.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-c.Done():
			return fmt.Errorf("%s %s still there after %s", u.GetKind(), u.GetName(), o.Timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
