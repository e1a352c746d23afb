package openapi

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// recorded is one write request kubectl sent to the test server.
type recorded struct {
	method, path, contentType string
	query                     map[string][]string
	body                      string
}

// fakeServer is the smallest Kubernetes-shaped server kubectl accepts: discovery built from
// the resources table, the real OpenAPI handler, and an object store of one namespace that
// answers GET/POST/PATCH so apply can run its create-then-patch cycle. It records writes.
type fakeServer struct {
	mu      sync.Mutex
	objects map[string][]byte
	writes  []recorded
}

func (f *fakeServer) discovery(w http.ResponseWriter, r *http.Request) bool {
	writeJSON := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch r.URL.Path {
	case "/version":
		writeJSON(map[string]string{"major": "1", "minor": "32", "gitVersion": Version})
	case "/api":
		writeJSON(metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	case "/apis":
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, gv := range groupVersions {
			if gv.Group == "" {
				continue
			}
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
		}
		writeJSON(list)
	default:
		for _, gv := range groupVersions {
			if r.URL.Path != "/"+gvPath(gv) {
				continue
			}
			list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
			for _, res := range resources {
				if res.gv == gv {
					list.APIResources = append(list.APIResources, metav1.APIResource{Name: res.plural, Namespaced: res.namespaced, Kind: res.kind,
						SingularName: strings.ToLower(res.kind), Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}})
				}
			}
			writeJSON(list)
			return true
		}
		return false
	}
	return true
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/openapi/") {
		Handler().ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodGet && f.discovery(w, r) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method != http.MethodGet {
		f.writes = append(f.writes, recorded{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.URL.Query(), string(body)})
	}
	notFound := func() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"%s not found"}`, r.URL.Path)
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.Method {
	case http.MethodGet:
		obj, ok := f.objects[r.URL.Path]
		if !ok {
			notFound()
			return
		}
		_, _ = w.Write(obj)
	case http.MethodPost:
		var meta struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		_ = json.Unmarshal(body, &meta)
		f.objects[r.URL.Path+"/"+meta.Metadata.Name] = body
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	case http.MethodPatch:
		obj, ok := f.objects[r.URL.Path]
		if !ok {
			notFound()
			return
		}
		_, _ = w.Write(obj)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// kubectlEnv starts the fake server over TLS and writes a kubeconfig for it.
func kubectlEnv(t *testing.T) (*fakeServer, func(args ...string) (string, error)) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is required for this test (installed on every wasmkube machine): %v", err)
	}
	f := &fakeServer{objects: map[string][]byte{}}
	ts := httptest.NewTLSServer(f)
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority: %q}
users:
- name: admin
  user: {token: test-token}
contexts:
- name: test
  context: {cluster: test, user: admin, namespace: default}
current-context: test
`, ts.URL, filepath.Join(dir, "ca.crt"))
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kcPath, "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	return f, run
}

func TestKubectlExplain(t *testing.T) {
	_, kubectl := kubectlEnv(t)
	out, err := kubectl("explain", "pod.spec")
	if err != nil {
		t.Fatalf("kubectl explain pod.spec: %v\n%s", err, out)
	}
	for _, want := range []string{"KIND:       Pod", "FIELD: spec <PodSpec>", "containers\t<[]Container> -required-", "restartPolicy\t<string>", "List of containers belonging to the pod."} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain pod.spec output lacks %q:\n%s", want, out)
		}
	}
	out, err = kubectl("explain", "deployment.spec.strategy.rollingUpdate.maxSurge")
	if err != nil {
		t.Fatalf("kubectl explain deployment: %v\n%s", err, out)
	}
	if !strings.Contains(out, "GROUP:      apps") || !strings.Contains(out, "maxSurge") {
		t.Errorf("kubectl explain deployment...maxSurge:\n%s", out)
	}
}

const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx:%s
  - name: side
    image: busybox
`

func TestKubectlStrictValidationAndApply(t *testing.T) {
	f, kubectl := kubectlEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(manifest, "1.27")), 0o600); err != nil {
		t.Fatal(err)
	}

	// With the default --validate=strict, kubectl finds the fieldValidation parameter of the
	// Pod's PATCH operation and leaves validation to the server: a manifest with an unknown
	// field reaches the server (which rejects it) instead of failing in kubectl's client-side
	// schema check.
	strict := filepath.Join(dir, "strict.yaml")
	withUnknown := strings.Replace(fmt.Sprintf(manifest, "1.27"), "name: web", "name: strict", 1) + "    bogusField: 1\n"
	if err := os.WriteFile(strict, []byte(withUnknown), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := kubectl("create", "-f", strict)
	if err != nil {
		t.Fatalf("kubectl create: %v\n%s", err, out)
	}
	out, err = kubectl("apply", "-f", file)
	if err != nil {
		t.Fatalf("kubectl apply (create): %v\n%s", err, out)
	}
	// A second apply with a changed image must produce a strategic merge patch keyed by the
	// container name, which kubectl builds from the patch extensions in the schema.
	if err := os.WriteFile(file, []byte(fmt.Sprintf(manifest, "1.28")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = kubectl("apply", "-f", file)
	if err != nil {
		t.Fatalf("kubectl apply (configure): %v\n%s", err, out)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	var sawPatch bool
	for _, w := range f.writes {
		if got := w.query["fieldValidation"]; len(got) != 1 || got[0] != "Strict" {
			t.Errorf("%s %s sent fieldValidation=%v, want Strict", w.method, w.path, got)
		}
		if w.method == http.MethodPatch {
			sawPatch = true
			if w.contentType != "application/strategic-merge-patch+json" {
				t.Errorf("apply patched with %s, want a strategic merge patch", w.contentType)
			}
			var patch map[string]any
			if err := json.Unmarshal([]byte(w.body), &patch); err != nil {
				t.Fatalf("patch body: %v", err)
			}
			spec, _ := patch["spec"].(map[string]any)
			if _, ok := spec["$setElementOrder/containers"]; !ok {
				t.Errorf("patch does not merge containers by name: %s", w.body)
			}
			if !strings.Contains(w.body, `"image":"nginx:1.28"`) || !strings.Contains(w.body, `"name":"app"`) {
				t.Errorf("patch does not carry the new image of container app: %s", w.body)
			}
		}
	}
	if len(f.writes) == 0 || !strings.Contains(f.writes[0].body, "bogusField") {
		t.Errorf("the manifest with an unknown field did not reach the server: %+v", f.writes)
	}
	if len(f.writes) != 3 || !sawPatch {
		t.Errorf("want create, create (apply) and patch, got %+v", f.writes)
	}
}
