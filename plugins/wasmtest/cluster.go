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
// policy, try (swap it into the API server's config: an admission policy into
// admission.policies, awaiting the reload; a scheduler plugin into scheduler.wasmPlugins
// with a profile of the run's own), assert (each of its resources created, or for UPDATE
// rows updated, in its own namespace, and the denial, warnings, stored object or placement
// compared with the result), cleanup (delete what was created, restore the config),
// every step bounded by o.Timeout. A step that fails or times out fails the rows it
// concerns; cleanup always runs.
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
	run := &clusterRun{ctx: ctx, cs: cs, dyn: dyn, ws: ws, o: o, g: g, original: original,
		name: fmt.Sprintf("wasmkube-test-%d", time.Now().UnixNano()%1_000_000_000), made: map[string]bool{}}
	if err := run.ensureNamespace(run.name); err != nil {
		return nil, fmt.Errorf("try: %w", err)
	}
	defer run.deleteNamespaces()
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
		start := time.Now()
		kind, err := moduleKind(ctx, path)
		if err != nil {
			out = append(out, failRows(rows, g, "try: "+err.Error(), time.Since(start))...)
			continue
		}
		if kind == placementPolicy {
			out = append(out, run.placements(&gp, path, rows)...)
		} else {
			out = append(out, run.admissions(&gp, path, rows)...)
		}
		if err := run.restore(kind); err != nil {
			return out, fmt.Errorf("cleanup: restoring %s: %w", o.ServerConfig, err)
		}
	}
	return out, nil
}

// clusterRun is one grid's run against a cluster.
type clusterRun struct {
	ctx      context.Context
	cs       kubernetes.Interface
	dyn      dynamic.Interface
	ws       *warnings
	o        ClusterOptions
	g        *Grid
	original []byte
	name     string          // the run's namespace (objects without one) and profile prefix
	made     map[string]bool // namespaces the run created
}

// moduleKind loads the module to see what it is by its exports.
func moduleKind(ctx context.Context, path string) (policyKind, error) {
	p, err := Open(ctx, path, Options{})
	if err != nil {
		return 0, err
	}
	defer p.Close(ctx)
	return policyKindOf(p, path)
}

func failRows(rows []GridResult, g *Grid, why string, d time.Duration) []Result {
	var out []Result
	for _, r := range rows {
		for _, ref := range r.Resources {
			obj, _ := g.find(ref, r.Kind)
			out = append(out, Result{Name: fmt.Sprintf("%s / %s %s: %s (cluster)", r.Policy, obj.kind, ref, r.Result), Diff: []string{why}, Duration: d})
		}
	}
	return out
}

// ensureNamespace creates the namespace when it does not exist (and deletes it at the
// end); one that exists is used as it is and left.
func (run *clusterRun) ensureNamespace(ns string) error {
	if run.made[ns] {
		return nil
	}
	c, cancel := context.WithTimeout(run.ctx, run.o.Timeout)
	defer cancel()
	for {
		_, err := run.cs.CoreV1().Namespaces().Create(c, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		switch {
		case err == nil:
			run.made[ns] = true
			return nil
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		// It exists: used as it is, unless it is being deleted (an earlier run's), which
		// the namespace controller finishes before it can be made again.
		cur, err := run.cs.CoreV1().Namespaces().Get(c, ns, metav1.GetOptions{})
		if err == nil && cur.DeletionTimestamp == nil {
			return nil
		}
		select {
		case <-c.Done():
			return fmt.Errorf("namespace %s is being deleted and still there after %s", ns, run.o.Timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (run *clusterRun) deleteNamespaces() {
	c, cancel := context.WithTimeout(context.WithoutCancel(run.ctx), run.o.Timeout)
	defer cancel()
	for ns := range run.made {
		_ = run.cs.CoreV1().Namespaces().Delete(c, ns, metav1.DeleteOptions{})
	}
}

// object is the grid object as the run sends it: a namespaced one in its own namespace
// (created for the run when missing), or the run's when it names none.
func (run *clusterRun) object(obj *gridObject) (*unstructured.Unstructured, dynamic.ResourceInterface, error) {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(obj.raw, &u.Object); err != nil {
		return nil, nil, err
	}
	gvr := gvrOf(obj)
	if clusterScoped[gvr.Resource] {
		return u, run.dyn.Resource(gvr), nil
	}
	ns := obj.namespace
	if ns == "" {
		ns = run.name
	}
	if err := run.ensureNamespace(ns); err != nil {
		return nil, nil, err
	}
	u.SetNamespace(ns)
	return u, run.dyn.Resource(gvr).Namespace(ns), nil
}

// admissions runs an admission policy's rows: the objects of its UPDATE rows are created
// before it is swapped in (under the server's own config), then the UPDATE rows update
// them and the CREATE rows create theirs, each deleted after its row.
func (run *clusterRun) admissions(gp *GridPolicy, path string, rows []GridResult) (out []Result) {
	start := time.Now()
	stored := map[*gridObject]*unstructured.Unstructured{}
	var updates, creates []GridResult
	for _, r := range rows {
		if r.Operation == "UPDATE" {
			updates = append(updates, r)
		} else {
			creates = append(creates, r)
		}
	}
	preErr := map[*gridObject]error{}
	for _, r := range updates {
		for _, ref := range r.Resources {
			obj, _ := run.g.find(ref, r.Kind)
			if _, done := stored[obj]; done || preErr[obj] != nil {
				continue
			}
			made, err := run.create(obj)
			if err != nil {
				preErr[obj] = fmt.Errorf("try: create %s before the policy is in force (for the UPDATE): %w", ref, err)
				continue
			}
			stored[obj] = made
		}
	}
	// Cleanup of the UPDATE rows' objects: before the CREATE rows (which may create the
	// same objects), and in any case before the policy is swapped out.
	cleanupStored := func() {
		for obj, u := range stored {
			if err := deleteAndWait(run.ctx, run.dyn, run.o, u); err != nil {
				out = append(out, Result{Name: fmt.Sprintf("%s: cleanup of %s %s", gp.Name, u.GetKind(), u.GetName()), Diff: []string{"cleanup: " + err.Error()}})
			}
			delete(stored, obj)
		}
	}
	defer cleanupStored()
	if err := swapIn(run.ctx, run.cs, run.o, run.original, run.g, gp, path); err != nil {
		return append(out, failRows(rows, run.g, "try: "+err.Error(), time.Since(start))...)
	}
	for i, r := range append(updates, creates...) {
		if i == len(updates) {
			cleanupStored()
		}
		for _, ref := range r.Resources {
			obj, _ := run.g.find(ref, r.Kind)
			name := fmt.Sprintf("%s / %s %s: %s (cluster)", r.Policy, obj.kind, ref, r.Result)
			if r.Operation == "UPDATE" && preErr[obj] != nil {
				out = append(out, Result{Name: name, Diff: []string{preErr[obj].Error()}})
				continue
			}
			t := time.Now()
			diff, made := run.assertAdmission(&r, obj, stored[obj])
			if made != nil && r.Operation != "UPDATE" {
				if err := deleteAndWait(run.ctx, run.dyn, run.o, made); err != nil {
					diff = append(diff, "cleanup: "+err.Error())
				}
			}
			out = append(out, gridRow(name, &r, diff, time.Since(t)))
		}
	}
	return out
}

// create creates obj under whatever is in force and returns what the cluster stored.
func (run *clusterRun) create(obj *gridObject) (*unstructured.Unstructured, error) {
	u, ri, err := run.object(obj)
	if err != nil {
		return nil, err
	}
	c, cancel := context.WithTimeout(run.ctx, run.o.Timeout)
	defer cancel()
	return ri.Create(c, u, metav1.CreateOptions{})
}

// restore writes the server's config back and, after an admission policy, waits for its
// reload (the scheduler reports no success; the run's profiles have names of its own, so
// a reload still under way colours nothing).
func (run *clusterRun) restore(kind policyKind) error {
	if kind == placementPolicy {
		return os.WriteFile(run.o.ServerConfig, run.original, 0o600)
	}
	return restore(run.ctx, run.cs, run.o, run.original)
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

// assertAdmission sends the row's request (CREATE: the object created; UPDATE: the object
// the run created before the swap, updated with itself) and compares what the cluster said
// with the result.
func (run *clusterRun) assertAdmission(r *GridResult, obj *gridObject, stored *unstructured.Unstructured) ([]string, *unstructured.Unstructured) {
	u, ri, err := run.object(obj)
	if err != nil {
		return []string{"try: " + err.Error()}, nil
	}
	c, cancel := context.WithTimeout(run.ctx, run.o.Timeout)
	defer cancel()
	run.ws.take()
	var made *unstructured.Unstructured
	if r.Operation == "UPDATE" {
		// As stored, sent back unchanged: object and old object are the resource (with
		// what the cluster added: defaults, a node a scheduler bound it to).
		if cur, gerr := ri.Get(c, stored.GetName(), metav1.GetOptions{}); gerr == nil {
			made, err = ri.Update(c, cur, metav1.UpdateOptions{})
		} else {
			err = gerr
		}
	} else {
		made, err = ri.Create(c, u, metav1.CreateOptions{})
	}
	warned := run.ws.take()
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
	// the policy were not there (the row is then reported as skipped, gridRow).
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
		objs, _ := readObjects(run.g.path(r.PatchedResource))
		var wantV any
		_ = json.Unmarshal(objs[0].raw, &wantV)
		if m, ok := wantV.(map[string]any); ok && obj.namespace == "" {
			if md, ok := m["metadata"].(map[string]any); ok {
				delete(md, "namespace") // the run's namespace is the object's
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
