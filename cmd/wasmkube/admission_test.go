package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// `wasmkube server` runs the config's admission policies in its API server and swaps
// them when the file changes.
func TestServerAdmissionPolicies(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "wasmkube.yaml")
	policy := `admission:
  policies:
  - name: require-team
    path: ` + wasmbuild.WAT(t, "plugins/admitwasm/testdata/require-team.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
`
	if err := os.WriteFile(file, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	stop, c := runServerCmd(t, filepath.Join(dir, "data"), "--apiserver-only", "--config", file)
	defer func() { _ = stop() }()
	ctx := context.Background()
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	_, err := c.CoreV1().Pods("default").Create(ctx, pod("web"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `admission policy require-team denied the request: pods "web" must carry label team`) {
		t.Fatalf("create without the label: %v", err)
	}
	if err := os.WriteFile(file, []byte("admission: {policies: []}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod("web"), metav1.CreateOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the policy was not dropped after the config changed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
