package wasmtest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// admissionConfig is a config with default-resources and, when requireLabels, with
// require-labels in the namespaces labelled env=prod.
func admissionConfig(t *testing.T, defaults, labels string, requireLabels bool) string {
	cfg := fmt.Sprintf(`admission:
  policies:
  - name: default-resources
    path: %s
    args: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: 500m, memory: 256Mi}}
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE, UPDATE]}]
`, defaults)
	if requireLabels {
		cfg += fmt.Sprintf(`  - name: require-labels
    path: %s
    args: {labels: [team]}
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE, UPDATE]}]
    namespaceSelector: {matchLabels: {env: prod}}
`, labels)
	}
	path := filepath.Join(t.TempDir(), "wasmkube.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A recording of pod and configmap writes in two namespaces, replayed against a config
// that adds require-labels (in env=prod namespaces) to default-resources, reports the
// unlabelled pod of the prod namespace as refused with the policy's message and the other
// pods as changed by default-resources; against a baseline of default-resources alone,
// only the refusal differs.
func TestRecordAndReplayAdmission(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defaults, labels := wasmbuild.Go(t, "wasm-examples/go/default-resources"), wasmbuild.Go(t, "wasm-examples/go/require-labels")
	srv := apiservertest.Start(t)
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	// A namespace and a configmap from before the recording: context, not requests.
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a",
		Labels: map[string]string{"env": "prod"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.CoreV1().ConfigMaps("team-a").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var rec bytes.Buffer
	recReady := make(chan struct{})
	recDone := make(chan error, 1)
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer rcancel()
	// Three pods, two configmaps, and the kube-root-ca.crt ConfigMap the controller manager
	// publishes into team-b.
	const requests = 6
	go func() {
		_, err := wasmtest.RecordClusterStats(rctx, srv.Client, &rec, wasmtest.RecordOptions{NoScheduling: true,
			Admission: []string{"pods", "configmaps"}, Dynamic: dyn, Requests: requests, Ready: recReady})
		recDone <- err
	}()
	select {
	case <-recReady:
	case err := <-recDone:
		t.Fatalf("record: %v", err)
	}
	// team-b (no env label) is created while recording: a namespace record as context.
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(ns, name string, lbls map[string]string) {
		t.Helper()
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("team-a", "web-0", map[string]string{"team": "shop"})
	pod("team-a", "web-1", nil)
	pod("team-b", "web-2", nil)
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := srv.Client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-recDone; err != nil {
		t.Fatalf("record: %v", err)
	}
	recs, err := wasmtest.ReadRecording(bytes.NewReader(rec.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.Scheduling() {
			t.Fatalf("an admission-only recording holds a scheduling record: %+v", r)
		}
		if a := r.Admission; a != nil {
			got = append(got, a.Operation+" "+a.Resource+" "+a.Namespace+"/"+a.Name)
			if a.Operation == "CREATE" && (len(a.Object) == 0 || bytes.Contains(a.Object, []byte("managedFields"))) {
				t.Errorf("%s: want the object as stored without managed fields, got %s", got[len(got)-1], a.Object)
			}
		}
	}
	for _, want := range []string{"CREATE pods team-a/web-1", "CREATE pods team-b/web-2", "CREATE configmaps team-b/settings", "CREATE configmaps team-b/kube-root-ca.crt"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Fatalf("recording: want %q among the requests, got\n%s", want, strings.Join(got, "\n"))
		}
	}
	if !bytes.Contains(rec.Bytes(), []byte(`"object":{"apiVersion":"v1","resource":"namespaces","kind":"Namespace","name":"team-b"`)) ||
		!bytes.Contains(rec.Bytes(), []byte(`"resource":"configmaps","kind":"ConfigMap","namespace":"team-a","name":"before"`)) {
		t.Fatalf("recording: want namespace team-b and configmap team-a/before as context records\n%s", rec.String())
	}

	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	load := func(file string) *admitwasm.Policies {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := wasmtest.AdmissionPolicies(ctx, admitwasm.Options{Host: h, Logger: quiet}, file, data)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cand := load(admissionConfig(t, defaults, labels, true))
	rep, err := wasmtest.ReplayAdmission(ctx, recs, cand, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wasmtest.WriteAdmissionReplay(&out, rep)
	text := out.String()
	if rep.Requests != requests || rep.Refused != 1 || rep.RefusedByPolicy["require-labels"] != 1 ||
		!strings.Contains(text, `refused CREATE pods team-a/web-1 by require-labels: admission policy require-labels denied the request: pods "web-1" must carry label team`) {
		t.Fatalf("against the recording: want %d requests and team-a/web-1 refused by require-labels\n%s", requests, text)
	}
	if rep.Changed != 2 || rep.ChangedByPolicy["default-resources"] != 2 ||
		!strings.Contains(text, "changed CREATE pods team-b/web-2 by default-resources:\n      spec.containers[0].resources.limits: (absent) -> ") {
		t.Fatalf("against the recording: want web-0 and web-2 changed by default-resources (web-1 is refused)\n%s", text)
	}
	t.Logf("\n%s", text)

	base := load(admissionConfig(t, defaults, labels, false))
	diff, err := wasmtest.ReplayAdmission(ctx, recs, cand, base)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	wasmtest.WriteAdmissionReplay(&out, diff)
	if diff.Reference != "baseline" || diff.Refused != 1 || diff.Changed != 0 || len(diff.ChangedByPolicy) != 0 || diff.Allowed != 0 {
		t.Fatalf("against the baseline: want only the refusal of team-a/web-1\n%s", out.String())
	}
	// And the other way round the refusal is gone.
	back, err := wasmtest.ReplayAdmission(ctx, recs, base, cand)
	if err != nil {
		t.Fatal(err)
	}
	if back.Allowed != 1 || back.AllowedByPolicy["require-labels"] != 1 || back.Refused != 0 {
		out.Reset()
		wasmtest.WriteAdmissionReplay(&out, back)
		t.Fatalf("baseline against the candidate: want team-a/web-1 no longer refused\n%s", out.String())
	}
}
