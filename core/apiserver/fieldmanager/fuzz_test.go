package fieldmanager

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzApply: any apply body, to a new or an existing Deployment and custom resource,
// either merges or fails with an API status (never a panic, never a bare error that
// would be a 500).
//
//	go test -fuzz FuzzApply -run '^$' ./core/apiserver/fieldmanager/
func FuzzApply(f *testing.F) {
	for _, s := range []string{deployBase, withReplicas("2"), replicasOnly("x"), "{}", "[]", "null", "apiVersion: apps/v1\nkind: Deployment\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: {containers: [{name: a}, {name: a}]}}}\n",
		widget("  ports: [{name: a, port: 1}, {name: a}]\n"), widget("  tags: [a, a]\n"), "apiVersion: example.com/v1\nkind: Widget\nspec: 3\n"} {
		f.Add([]byte(s), false)
	}
	m := deployments(f)
	live, _, err := m.Apply(m.New(), []byte(withReplicas("1")), ApplyOptions{Manager: "seed"})
	if err != nil {
		f.Fatal(err)
	}
	w := widgets(f)
	wlive, _, err := w.Apply(w.New(), []byte(widget("  ports: [{name: http, port: 80}]\n  tags: [a]\n")), ApplyOptions{Manager: "seed"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, force bool) {
		for _, target := range []struct {
			m    *Manager
			live func() runtime.Object
		}{{m, m.New}, {m, live.DeepCopyObject}, {w, w.New}, {w, wlive.DeepCopyObject}} {
			for _, v := range []Validation{ValidationStrict, ValidationIgnore} {
				_, _, err := target.m.Apply(target.live(), body, ApplyOptions{Manager: "fuzz", Force: force, Validation: v})
				var st apierrors.APIStatus
				if err != nil && !errors.As(err, &st) {
					t.Fatalf("apply of %q: an error that is no API status: %v", body, err)
				}
			}
		}
	})
}
