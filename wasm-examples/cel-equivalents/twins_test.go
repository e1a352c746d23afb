// Package celequivalents_test runs the four example wasm admission policies (the admission:
// section of examples/wasmkube.yaml) and their CEL twins in this directory on two real API
// servers, sends both the same requests, and checks that they agree: the same verdict,
// the same reason, a warning on the same requests, the same defaults.
package celequivalents_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/admission/celpolicy"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// CELSet reads the policies and bindings of this directory's YAML files, defaulted.
func CELSet(t testing.TB) celpolicy.Set {
	t.Helper()
	var set celpolicy.Set
	files, _ := filepath.Glob(filepath.Join(wasmbuild.Root(), "wasm-examples", "cel-equivalents", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096)
		for {
			var u unstructured.Unstructured
			if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var obj runtime.Object
			switch u.GetKind() {
			case "ValidatingAdmissionPolicy":
				obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
			case "ValidatingAdmissionPolicyBinding":
				obj = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			case "MutatingAdmissionPolicy":
				obj = &admissionregistrationv1.MutatingAdmissionPolicy{}
			case "MutatingAdmissionPolicyBinding":
				obj = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
			default:
				t.Fatalf("%s: unexpected kind %q", f, u.GetKind())
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
				t.Fatalf("%s: %s %s: %v", f, u.GetKind(), u.GetName(), err)
			}
			defaults.Default(obj)
			if errs := celpolicy.CompileErrors(obj); len(errs) > 0 {
				t.Fatalf("%s: %v", f, errs)
			}
			switch o := obj.(type) {
			case *admissionregistrationv1.ValidatingAdmissionPolicy:
				set.Validating = append(set.Validating, o)
			case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
				set.ValidatingBindings = append(set.ValidatingBindings, o)
			case *admissionregistrationv1.MutatingAdmissionPolicy:
				set.Mutating = append(set.Mutating, o)
			case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
				set.MutatingBindings = append(set.MutatingBindings, o)
			}
		}
	}
	if len(set.Validating) != 3 || len(set.Mutating) != 1 {
		t.Fatalf("read %d validating and %d mutating policies, want 3 and 1", len(set.Validating), len(set.Mutating))
	}
	return set
}

// wasmConfig is examples/wasmkube.yaml's admission section with each module built.
func wasmConfig(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wasmbuild.Root(), "examples", "wasmkube.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	head, section, ok := strings.Cut(string(b), "\nadmission:")
	if !ok {
		t.Fatal("examples/wasmkube.yaml has no admission: section")
	}
	return head + "\nadmission:" + regexp.MustCompile(`\.\./wasm-examples/go/[a-z-]+/[a-z-]+\.wasm`).ReplaceAllStringFunc(section, func(p string) string {
		return wasmbuild.Go(t, strings.TrimPrefix(filepath.Dir(p), "../"))
	})
}

// server is an API server and a client that keeps the last request's warnings.
type server struct {
	cs       kubernetes.Interface
	mu       sync.Mutex
	warnings []string
}

func newServer(t testing.TB, srv *apiservertest.Server) *server {
	s := &server{}
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = warningFunc(func(m string) { s.mu.Lock(); s.warnings = append(s.warnings, m); s.mu.Unlock() })
	var err error
	if s.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return s
}

type warningFunc func(string)

func (f warningFunc) HandleWarningHeader(_ int, _ string, msg string) { f(msg) }

type outcome struct {
	pod      *corev1.Pod
	err      error
	warnings []string
}

func (s *server) create(ctx context.Context, p *corev1.Pod) outcome {
	s.mu.Lock()
	s.warnings = nil
	s.mu.Unlock()
	got, err := s.cs.CoreV1().Pods(p.Namespace).Create(ctx, p.DeepCopy(), metav1.CreateOptions{})
	s.mu.Lock()
	defer s.mu.Unlock()
	return outcome{got, err, append([]string(nil), s.warnings...)}
}

// TestWasmAndCELTwinsAgree: every request gets the same verdict and reason from the wasm
// example policies and from their CEL twins.
func TestWasmAndCELTwinsAgree(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	file := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(file, []byte(wasmConfig(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(dir, "wasm-cache"), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := admitwasm.New(ctx, admitwasm.Options{Host: h, ConfigFile: file, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pol.Close(context.Background()) })
	wasm := newServer(t, apiservertest.Start(t, apiservertest.WithAdmission(pol)))
	cel := newServer(t, apiservertest.Start(t, apiservertest.WithAdmission(celpolicy.New(celpolicy.Config{Source: celpolicy.Static(CELSet(t)), Default: defaults.Default}))))
	for _, s := range []*server{wasm, cel} {
		if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop",
			Labels: map[string]string{"wasmkube.io/require-team": "true"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(ns, name string, labels map[string]string, edit func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}}}
		if edit != nil {
			edit(&p.Spec)
		}
		return p
	}
	privileged := true
	cases := []struct {
		pod    *corev1.Pod
		reason string // the wasm policy's reason, which both must give; "" when admitted
		warn   string // the warning's reason both must give
	}{
		{pod: pod("default", "plain", nil, nil)},
		{pod: pod("default", "latest", nil, func(s *corev1.PodSpec) { s.Containers[0].Image = "busybox:latest" }),
			warn: "image busybox:latest has no tag or the tag latest: pin a version or a digest"},
		{pod: pod("default", "untagged", nil, func(s *corev1.PodSpec) {
			s.Containers = append(s.Containers, corev1.Container{Name: "side", Image: "localhost:5000/side"})
			s.Containers[0].Image = "busybox"
		}), warn: "images busybox, localhost:5000/side have no tag or the tag latest: pin a version or a digest"},
		{pod: pod("default", "digest", nil, func(s *corev1.PodSpec) {
			s.Containers[0].Image = "busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000"
		})},
		{pod: pod("default", "root", nil, func(s *corev1.PodSpec) {
			s.Containers = append(s.Containers, corev1.Container{Name: "root", Image: "busybox:1.36", SecurityContext: &corev1.SecurityContext{Privileged: &privileged}})
		}), reason: "container root may not be privileged"},
		{pod: pod("default", "hostnet", nil, func(s *corev1.PodSpec) { s.HostNetwork = true }), reason: "the node's network is not allowed"},
		{pod: pod("default", "hostpath", nil, func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "etc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}}
		}), reason: "volume etc may not mount a host path"},
		{pod: pod("shop", "web", nil, nil), reason: `pods "web" must carry label team`},
		{pod: pod("shop", "teamed", map[string]string{"team": "a"}, nil)},
		{pod: pod("default", "sized", nil, func(s *corev1.PodSpec) {
			s.Containers = append(s.Containers, corev1.Container{Name: "sized", Image: "busybox:1.36",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resourceMust("50m")}}})
		})},
	}
	for _, tc := range cases {
		w, c := wasm.create(ctx, tc.pod), cel.create(ctx, tc.pod)
		name := tc.pod.Namespace + "/" + tc.pod.Name
		switch {
		case tc.reason == "" && (w.err != nil || c.err != nil):
			t.Errorf("%s: admitted by the wasm policies: %v; by the CEL twins: %v", name, w.err, c.err)
			continue
		case tc.reason != "" && (w.err == nil || c.err == nil || !strings.Contains(w.err.Error(), tc.reason) || !strings.Contains(c.err.Error(), tc.reason)):
			t.Errorf("%s: want both refused with %q; wasm: %v; CEL: %v", name, tc.reason, w.err, c.err)
			continue
		}
		if has := func(ws []string) bool { return tc.warn != "" && len(ws) == 1 && strings.Contains(ws[0], tc.warn) }; (tc.warn != "") != has(w.warnings) || (tc.warn != "") != has(c.warnings) ||
			(tc.warn == "" && (len(w.warnings) != 0 || len(c.warnings) != 0)) {
			t.Errorf("%s: want warning %q; wasm: %q; CEL: %q", name, tc.warn, w.warnings, c.warnings)
		}
		if name == "default/plain" {
			r := c.pod.Spec.Containers[0].Resources
			if cpu, mem := r.Requests[corev1.ResourceCPU], r.Limits[corev1.ResourceMemory]; cpu.String() != "100m" || mem.String() != "256Mi" {
				t.Errorf("%s: the defaults were not added: %v", name, r)
			}
		}
		if tc.reason == "" {
			for i := range w.pod.Spec.Containers {
				if wr, cr := w.pod.Spec.Containers[i].Resources, c.pod.Spec.Containers[i].Resources; !reflect.DeepEqual(wr, cr) {
					t.Errorf("%s: container %d's resources: wasm %v, CEL %v", name, i, wr, cr)
				}
			}
		}
	}
}

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }
