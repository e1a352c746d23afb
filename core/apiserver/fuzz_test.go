package apiserver_test

// Fuzz targets for what a client sends the API server: request bodies (JSON, YAML,
// protobuf), the three patch types, label and field selectors. Each drives the real
// handler (an embedded-etcd server started once per fuzz process) and asserts that bad
// input is a 4xx, never a 5xx or a panic. `go test` runs them on their seeds (f.Add and
// testdata/fuzz/<Name>/); `make fuzz` runs each for longer (scripts/fuzz.sh).

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// fuzzServer starts one server for a fuzz target, with a ConfigMap and a Pod to patch.
func fuzzServer(f *testing.F) *apiservertest.Server {
	srv := apiservertest.Start(f)
	if _, err := srv.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}, metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	return srv
}

// serve runs one request through the handler and fails on a 5xx (the handler's panics
// fail the fuzz run by themselves).
func serve(t *testing.T, srv *apiservertest.Server, method, target, contentType string, body []byte) int {
	t.Helper()
	req := httptest.NewRequest(method, "https://127.0.0.1"+target, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+srv.Config.BearerToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	srv.API.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s (%s) %q: %d %s", method, target, contentType, body, rec.Code, rec.Body.String())
	}
	return rec.Code
}

var bodyTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "text/plain", ""}

var bodyTargets = []string{
	"/api/v1/namespaces/default/configmaps",
	"/api/v1/namespaces/default/pods",
	"/api/v1/namespaces/default/services",
	"/apis/apps/v1/namespaces/default/deployments",
	"/api/v1/namespaces",
}

// FuzzRequestBody: a create with any body, in any of the media types, to a few
// resources (server-side dry run, so nothing accumulates in etcd; the decoding,
// defaulting, admission and validation all run).
func FuzzRequestBody(f *testing.F) {
	srv := fuzzServer(f)
	f.Add(uint8(0), uint8(0), []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"b"}}`))
	f.Add(uint8(1), uint8(1), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: y}\nspec: {containers: [{name: c, image: i}]}\n"))
	f.Add(uint8(2), uint8(0), []byte("k8s\x00\n\x0c\n\x02v1\x12\x06Status"))
	f.Add(uint8(0), uint8(2), []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":99999}],"clusterIP":"1.2.3"}}`))
	f.Add(uint8(0), uint8(3), []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":-1,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"c"}}}}}`))
	f.Add(uint8(1), uint8(4), []byte("a: &a [*a, *a]\n"))
	f.Add(uint8(0), uint8(1), []byte(`{"metadata":{"name":"p","name":"q"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1e400"}}}]}}`))
	f.Fuzz(func(t *testing.T, typ, target uint8, body []byte) {
		ct := bodyTypes[int(typ)%len(bodyTypes)]
		serve(t, srv, http.MethodPost, bodyTargets[int(target)%len(bodyTargets)]+"?dryRun=All&fieldValidation=Strict", ct, body)
		serve(t, srv, http.MethodPut, "/api/v1/namespaces/default/configmaps/cm?dryRun=All", ct, body)
	})
}

var patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}

// FuzzPatch: the three patch types (and apply) on a ConfigMap and a Pod, dry run.
func FuzzPatch(f *testing.F) {
	srv := fuzzServer(f)
	f.Add(uint8(0), false, []byte(`[{"op":"add","path":"/data/x","value":"y"}]`))
	f.Add(uint8(0), true, []byte(`[{"op":"move","from":"/spec","path":"/spec/containers/0"},{"op":"test","path":"/metadata/name","value":1}]`))
	f.Add(uint8(0), false, []byte(`[{"op":"remove","path":"/data/~2"},{"op":"copy","from":"/data","path":"/data/self"}]`))
	f.Add(uint8(1), false, []byte(`{"data":{"k":null,"n":"1"},"metadata":{"labels":{"bad key":"v"}}}`))
	f.Add(uint8(1), true, []byte(`{"spec":{"containers":null}}`))
	f.Add(uint8(2), true, []byte(`{"spec":{"containers":[{"name":"c","image":"i2"},{"$patch":"delete","name":"c"}],"$setElementOrder/containers":[{"name":"x"}]}}`))
	f.Add(uint8(2), true, []byte(`{"spec":{"$retainKeys":["x"],"containers":[{"$patch":"replace"}]}}`))
	f.Add(uint8(2), false, []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]},"data":{"$patch":"merge"}}`))
	f.Add(uint8(3), false, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: w}\n"))
	f.Fuzz(func(t *testing.T, typ uint8, pod bool, body []byte) {
		target := "/api/v1/namespaces/default/configmaps/cm"
		if pod {
			target = "/api/v1/namespaces/default/pods/p"
		}
		q := "?dryRun=All"
		pt := patchTypes[int(typ)%len(patchTypes)]
		if strings.HasPrefix(pt, "application/apply") {
			q += "&fieldManager=fuzz&force=true"
		}
		serve(t, srv, http.MethodPatch, target+q, pt, body)
	})
}

// FuzzSelectors: label and field selectors on lists and a dry-run delete-collection.
func FuzzSelectors(f *testing.F) {
	srv := fuzzServer(f)
	for _, s := range [][2]string{
		{"a=b", "metadata.name=cm"}, {"a in (b,c),!d", "metadata.namespace!=x"}, {"a notin ()", ""},
		{"", "spec.nodeName=n1,status.phase=Running"}, {"a==b,c!=d,e", "spec.unknown=1"}, {"x>1", "metadata.name==\\,"},
		{"(((", "=,=,="}, {strings.Repeat("a,", 200), strings.Repeat("metadata.name=a,", 50)}, {"a=" + strings.Repeat("b", 70), "\\"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, labelSel, fieldSel string) {
		q := url.Values{"labelSelector": {labelSel}, "fieldSelector": {fieldSel}}.Encode()
		for _, res := range []string{"/api/v1/namespaces/default/configmaps", "/api/v1/pods"} {
			serve(t, srv, http.MethodGet, res+"?"+q, "", nil)
		}
		serve(t, srv, http.MethodDelete, "/api/v1/namespaces/default/configmaps?dryRun=All&"+q, "", nil)
	})
}
