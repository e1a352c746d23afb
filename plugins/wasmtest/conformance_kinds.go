package wasmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// subject is one kind of call the kind-generic checks make: a fixture list, and the
// answer to fixture i as a comparable string (its verdict, reason, warnings, patch).
type subject struct {
	kind     string
	fixtures int
	answer   func(ctx context.Context, pool *wasmhost.Pool, i int, padded bool) (string, error)
	empty    func(ctx context.Context, pool *wasmhost.Pool) error
	close    func()
}

// kindChecks are the scheduler checks' counterparts for an admission or kubelet-hook kind:
// no failure on fixtures, no state across calls, the buffer rule, empty objects, bounded
// memory. (Batches and node orders do not apply; init is checked once for every kind.)
func (p *Plugin) kindChecks(ctx context.Context, s *subject, o ConformanceOptions) []Result {
	run := func(name string, f func() []string) Result {
		start := time.Now()
		diff := f()
		return Result{Name: s.kind + ": " + name, Diff: diff, Duration: time.Since(start)}
	}
	var out []Result
	add := func(r Result) {
		r.Passed = len(r.Diff) == 0
		out = append(out, r)
	}
	fresh := make([]string, s.fixtures)
	add(run("answers every fixture without a failure", func() []string {
		var diff []string
		for i := range s.fixtures {
			pool, d := p.pool(ctx, o.Args, 1)
			if d != nil {
				return d
			}
			a, err := s.answer(ctx, pool, i, false)
			pool.Close()
			if err != nil {
				diff = append(diff, failure(fmt.Sprintf("fixture %d", i), err)...)
			}
			fresh[i] = a
		}
		return diff
	}))
	add(run("no state carried from one call to the next", func() []string {
		pool, d := p.pool(ctx, o.Args, 1)
		if d != nil {
			return d
		}
		defer pool.Close()
		order := make([]int, 0, 2*s.fixtures)
		for i := range s.fixtures {
			order = append(order, i)
		}
		for i := s.fixtures - 1; i >= 0; i-- {
			order = append(order, i)
		}
		for j, i := range order {
			a, err := s.answer(ctx, pool, i, false)
			if err != nil {
				return failure(fmt.Sprintf("fixture %d", i), err)
			}
			if a != fresh[i] {
				prev := "none"
				if j > 0 {
					prev = fmt.Sprint(order[j-1])
				}
				return []string{fmt.Sprintf("fixture %d answered %s after fixture %s on the same instance, %s on a fresh one (keep nothing from a call in globals)", i, a, prev, fresh[i])}
			}
		}
		return nil
	}))
	add(run("long, unicode and unrelated data do not change answers (buffer rule)", func() []string {
		pool, d := p.pool(ctx, o.Args, 1)
		if d != nil {
			return d
		}
		defer pool.Close()
		var diff []string
		for i := range s.fixtures {
			a, err := s.answer(ctx, pool, i, true)
			if err != nil {
				return failure(fmt.Sprintf("fixture %d with a 100 KiB annotation", i), err)
			}
			if a != fresh[i] {
				diff = append(diff, fmt.Sprintf("fixture %d: a 100 KiB annotation and a unicode label changed the answer from %s to %s (a read whose length n > cap must be retried with a larger buffer)", i, fresh[i], a))
			}
		}
		return diff
	}))
	add(run("empty and missing fields are not a failure", func() []string {
		pool, d := p.pool(ctx, o.Args, 1)
		if d != nil {
			return d
		}
		defer pool.Close()
		if err := s.empty(ctx, pool); err != nil {
			return failure("an object with no name, labels or spec", err)
		}
		return nil
	}))
	add(run("memory stays bounded across 2 x 10,000 calls", func() []string {
		pool, d := p.pool(ctx, o.Args, 1)
		if d != nil {
			return d
		}
		defer pool.Close()
		quarter := max(o.Calls/4, 1)
		var marks []memMark
		for i := range 2 * o.Calls {
			if _, err := s.answer(ctx, pool, i%s.fixtures, false); err != nil {
				return leakFinding("call", marks, o.Calls, i+1, failure(fmt.Sprintf("call %d of %d", i+1, 2*o.Calls), err))
			}
			if i == 0 || (i+1)%quarter == 0 {
				marks = append(marks, memMark{i + 1, sum(pool.IdleMemory())})
			}
		}
		return leakFinding("call", marks, o.Calls, 0, nil)
	}))
	return out
}

// fixturePod is a pod of the admission fixtures.
func fixturePod(name string, labels map[string]string, image string, privileged bool) *v1.Pod {
	c := v1.Container{Name: "app", Image: image}
	if privileged {
		t := true
		c.SecurityContext = &v1.SecurityContext{Privileged: &t}
	}
	return &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: labels},
		Spec:       v1.PodSpec{Containers: []v1.Container{c}}}
}

// fixtureAttributes is an admission request of the fixtures.
func fixtureAttributes(op admission.Operation, obj, old runtime.Object, kind, res string) *admission.Attributes {
	a := &admission.Attributes{Operation: op, Object: obj, OldObject: old, Namespace: "default",
		User: admission.UserInfo{Name: "alice", Groups: []string{"system:authenticated"}}}
	a.Kind = v1.SchemeGroupVersion.WithKind(kind)
	a.Resource = v1.SchemeGroupVersion.WithResource(res)
	if kind == "Deployment" {
		a.Kind, a.Resource = appsv1.SchemeGroupVersion.WithKind(kind), appsv1.SchemeGroupVersion.WithResource(res)
	}
	m := obj
	if m == nil {
		m = old
	}
	if mo, ok := m.(metav1.Object); ok {
		a.Name = mo.GetName()
	}
	return a
}

// admissionFixtures are requests of several kinds and operations: a plain, a labelled, a
// :latest and a privileged pod, an UPDATE that drops labels, a DELETE, a Deployment and a
// ConfigMap.
func admissionFixtures() []*admission.Attributes {
	pod, attrs := fixturePod, fixtureAttributes
	labelled := pod("labelled", map[string]string{"team": "shop", "app": "web"}, "busybox:1.36", false)
	return []*admission.Attributes{
		attrs(admission.Create, pod("plain", nil, "busybox:1.36", false), nil, "Pod", "pods"),
		attrs(admission.Create, labelled, nil, "Pod", "pods"),
		attrs(admission.Create, pod("latest", nil, "busybox:latest", false), nil, "Pod", "pods"),
		attrs(admission.Create, pod("root", nil, "busybox", true), nil, "Pod", "pods"),
		attrs(admission.Update, pod("labelled", nil, "busybox:1.36", false), labelled, "Pod", "pods"),
		attrs(admission.Delete, nil, labelled, "Pod", "pods"),
		attrs(admission.Create, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}, nil, "Deployment", "deployments"),
		attrs(admission.Create, &v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"k": "v"}}, nil, "ConfigMap", "configmaps"),
	}
}

// admissionSubject calls Mutate then Validate, as the API server does, on the fixture
// requests.
func admissionSubject(p *Plugin) *subject {
	attrs := fixtureAttributes
	fixtures := admissionFixtures()
	big := strings.Repeat("x", 100<<10)
	// unpad removes what padded added, so that a mutation's result compares equal.
	unpad := func(obj runtime.Object) runtime.Object {
		obj = obj.DeepCopyObject()
		if m, ok := obj.(metav1.Object); ok {
			ann, lab := m.GetAnnotations(), m.GetLabels()
			delete(ann, "conformance.wasmkube.io/padding")
			delete(lab, "conformance.wasmkube.io/unicode")
			if len(ann) == 0 {
				ann = nil
			}
			if len(lab) == 0 {
				lab = nil
			}
			m.SetAnnotations(ann)
			m.SetLabels(lab)
		}
		return obj
	}
	call := func(ctx context.Context, pool *wasmhost.Pool, a *admission.Attributes, padded bool) (string, error) {
		cp := *a
		if a.Object != nil {
			cp.Object = a.Object.DeepCopyObject()
		}
		var out []string
		req := admitwasm.NewRequest(&cp)
		for _, k := range pool.Module().Kinds().Intersect(admitwasm.Kinds) {
			c := &admitwasm.Call{Kind: k, Attributes: &cp}
			if err := c.Do(ctx, pool, req); err != nil {
				return "", err
			}
			if over := warningsOverCap(k.Name, c); len(over) > 0 {
				return "", errors.New(strings.Join(over, "; "))
			}
			out = append(out, fmt.Sprintf("%s=%d %q %q", k.Name, c.Code, c.Reason, c.Warnings))
			if c.Code != wasmhost.CodeSuccess {
				break
			}
			if c.Patched != nil {
				shown := c.Patched
				if padded {
					shown = unpad(shown)
				}
				b, _ := json.Marshal(shown)
				out = append(out, string(b))
				cp.Object = c.Patched
				req = admitwasm.NewRequest(&cp)
			}
		}
		return strings.Join(out, "; "), nil
	}
	return &subject{kind: "admission", fixtures: len(fixtures),
		answer: func(ctx context.Context, pool *wasmhost.Pool, i int, padded bool) (string, error) {
			a := fixtures[i]
			if padded {
				cp := *a
				for _, o := range []*runtime.Object{&cp.Object, &cp.OldObject} {
					if *o == nil {
						continue
					}
					*o = (*o).DeepCopyObject()
					if m, ok := (*o).(metav1.Object); ok {
						ann, lab := m.GetAnnotations(), m.GetLabels()
						if ann == nil {
							ann = map[string]string{}
						}
						if lab == nil {
							lab = map[string]string{}
						}
						ann["conformance.wasmkube.io/padding"], lab["conformance.wasmkube.io/unicode"] = big, "zoné-日本-ü"
						m.SetAnnotations(ann)
						m.SetLabels(lab)
					}
				}
				return call(ctx, pool, &cp, true)
			}
			return call(ctx, pool, a, false)
		},
		empty: func(ctx context.Context, pool *wasmhost.Pool) error {
			_, err := call(ctx, pool, attrs(admission.Create, &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}, nil, "Pod", "pods"), false)
			return err
		}}
}

// hookSubject calls the module's Probe or PreStop for fixture pods against a loopback
// endpoint answering every path with a small JSON document.
func hookSubject(p *Plugin) (*subject, error) {
	k := nodewasm.Probe
	if !p.mod.Kinds().Has(k) {
		k = nodewasm.PreStop
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status": "ok"}` + "\nerrors_total 0\n"))
	}))
	pods := []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}, Status: v1.PodStatus{PodIP: "10.88.0.5"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", Annotations: map[string]string{"hooks.wasmkube.io/readiness.app": "x"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}, {Name: "side"}}}, Status: v1.PodStatus{PodIP: "10.88.0.6"}},
	}
	big := strings.Repeat("x", 100<<10)
	call := func(ctx context.Context, pool *wasmhost.Pool, pod *v1.Pod) (string, error) {
		c := &nodewasm.Call{Kind: k, Pod: pod, Container: "app", PodIP: pod.Status.PodIP, Timeout: min(pool.Module().Timeout(), 1e9)}
		if k == nodewasm.Probe {
			c.ProbeKind = nodewasm.ProbeReadiness
		}
		c.RedirectTo(srv.Listener.Addr().String())
		err := c.Do(ctx, pool)
		var ce *wasmhost.CallError
		if err != nil && !(asCallError(err, &ce) && ce.Reason == wasmhost.ReasonError) {
			return "", err
		}
		return fmt.Sprintf("%d %q", c.Code, c.Reason), nil
	}
	return &subject{kind: k.Name, fixtures: len(pods), close: srv.Close,
		answer: func(ctx context.Context, pool *wasmhost.Pool, i int, padded bool) (string, error) {
			pod := pods[i]
			if padded {
				pod = pod.DeepCopy()
				pad(&pod.ObjectMeta, big)
			}
			return call(ctx, pool, pod)
		},
		empty: func(ctx context.Context, pool *wasmhost.Pool) error {
			_, err := call(ctx, pool, &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}})
			return err
		}}, nil
}

func asCallError(err error, ce **wasmhost.CallError) bool {
	e, ok := err.(*wasmhost.CallError)
	if ok {
		*ce = e
	}
	return ok
}
