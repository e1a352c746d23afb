package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// Costly patches are refused before the work, with a 4xx naming the limit (upstream's:
// nesting depth 10,000, 10,000 JSON patch operations, a 3 MiB body), and a merge patch
// nested just under the depth limit is answered with a 4xx (its merge is linear; the time
// it takes is in docs/apiserver.md, not asserted here).
func TestCostlyPatchesRefusedEarly(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	if _, err := srv.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/namespaces/default/configmaps/cm"
	nested := func(depth int) string {
		// metadata and labels are two levels; the rest is the nesting under the label.
		return `{"metadata":{"labels":` + strings.Repeat(`{"a":`, depth-2) + `1` + strings.Repeat(`}`, depth-2) + `}}`
	}
	var ops []string
	for i := 0; i <= 10000; i++ {
		ops = append(ops, `{"op":"test","path":"/metadata/name","value":"cm"}`)
	}
	copyBomb := []string{`{"op":"add","path":"/data","value":{"k":"` + strings.Repeat("x", 100<<10) + `"}}`}
	for i := 0; i < 40; i++ {
		copyBomb = append(copyBomb, fmt.Sprintf(`{"op":"copy","from":"/data/k","path":"/data/k%d"}`, i))
	}
	cases := []struct {
		name, ct, body string
		code           int
		msg            string
	}{
		{"merge patch deeper than the limit", "application/merge-patch+json", nested(10001), http.StatusBadRequest, "the limit is 10000 levels"},
		{"strategic merge patch deeper than the limit", "application/strategic-merge-patch+json", nested(10001), http.StatusBadRequest, "the limit is 10000 levels"},
		{"JSON patch deeper than the limit", "application/json-patch+json", `[{"op":"add","path":"/data","value":` + nested(10000) + `}]`, http.StatusBadRequest, "the limit is 10000 levels"},
		{"merge patch at the limit", "application/merge-patch+json", nested(10000), http.StatusBadRequest, "labels"},
		{"JSON patch with too many operations", "application/json-patch+json", "[" + strings.Join(ops, ",") + "]", http.StatusRequestEntityTooLarge, "the limit is 10000"},
		{"JSON patch copying past the limit", "application/json-patch+json", "[" + strings.Join(copyBomb, ",") + "]", http.StatusUnprocessableEntity, "copy"},
		{"body over 3 MiB", "application/merge-patch+json", `{"data":{"k":"` + strings.Repeat("x", 3<<20) + `"}}`, http.StatusRequestEntityTooLarge, "3145728 bytes"},
	}
	for _, c := range cases {
		code, st := rawRequest(t, srv, http.MethodPatch, path, c.ct, []byte(c.body))
		if code != c.code || !strings.Contains(st.Message, c.msg) {
			t.Errorf("%s: %d %q, want %d naming %q", c.name, code, st.Message, c.code, c.msg)
		}
	}
	// The object is untouched, and an ordinary merge patch still works.
	code, st := rawRequest(t, srv, http.MethodPatch, path, "application/merge-patch+json", []byte(`{"metadata":{"labels":{"a":"b"}},"data":{"k":"v"}}`))
	if code != http.StatusOK {
		t.Fatalf("ordinary merge patch: %d %s", code, st.Message)
	}
	cm, err := srv.Client.CoreV1().ConfigMaps("default").Get(ctx, "cm", metav1.GetOptions{})
	if err != nil || cm.Labels["a"] != "b" || len(cm.Data) != 1 {
		t.Fatalf("after the patches: %v %+v", err, cm)
	}
}
