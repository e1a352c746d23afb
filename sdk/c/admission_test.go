package csdk_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// The admission declarations of wasmkube.h match the host: a module importing each of
// them loads (with the capability get_object and list_objects need) and runs.
func TestAdmissionHeaderMatchesTheHost(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Fatal("clang not found (install it: scripts/deps.sh)")
	}
	dir := filepath.Join(wasmbuild.Root(), "sdk", "c")
	out := filepath.Join(t.TempDir(), "admission.wasm")
	cmd := exec.Command(clang, "--target=wasm32", "-nostdlib", "-O2", "-Wall", "-Wextra", "-Werror",
		"-Wl,--no-entry", "-I", dir, "-o", out, filepath.Join(dir, "testdata", "admission.c"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, b)
	}
	p := admitwasmtest.Load(t, "all-admission", out, "", "namespaces")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"deny": ""}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}}}
	r := p.Run(t, admitwasmtest.CreatePod(pod))
	if r.Err != nil || r.Allowed || r.Message != "Pod busybox:1.36\n" {
		t.Errorf("allowed=%v message=%q err=%v, want denied with %q", r.Allowed, r.Message, r.Err, "Pod busybox:1.36\n")
	}
	pod.Labels = nil
	r = p.Run(t, admitwasmtest.CreatePod(pod))
	if got, ok := r.Object.(*v1.Pod); !r.Allowed || !ok || got.Annotations["c"] != "yes" {
		t.Errorf("allowed=%v message=%q err=%v object %+v, want the mutate's annotation", r.Allowed, r.Message, r.Err, r.Object)
	}
}
