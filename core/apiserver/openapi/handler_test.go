package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
)

func get(t *testing.T, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec
}

func v3Index(t *testing.T) map[string]string {
	t.Helper()
	rec := get(t, "/openapi/v3", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi/v3: %d", rec.Code)
	}
	var idx struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &idx); err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{}
	for k, v := range idx.Paths {
		urls[k] = v.ServerRelativeURL
	}
	return urls
}

func TestV3IndexAndDocuments(t *testing.T) {
	urls := v3Index(t)
	for _, key := range []string{"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1", "apis/autoscaling/v1"} {
		u, ok := urls[key]
		if !ok || !strings.HasPrefix(u, "/openapi/v3/"+key+"?hash=") {
			t.Fatalf("index entry %s = %q", key, u)
		}
		rec := get(t, u, nil)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "public, immutable" {
			t.Fatalf("GET %s: %d %v", u, rec.Code, rec.Header())
		}
		var doc struct {
			OpenAPI    string `json:"openapi"`
			Components struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.0.0" || len(doc.Components.Schemas) == 0 {
			t.Fatalf("document %s: %v %+v", key, err, doc.OpenAPI)
		}
	}
	// A stale hash is redirected to the current document.
	rec := get(t, "/openapi/v3/api/v1?hash=0000", nil)
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != urls["api/v1"] {
		t.Errorf("stale hash: %d Location=%q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(t, "/openapi/v3/apis/example.com/v1", nil); rec.Code != http.StatusNotFound {
		t.Errorf("unknown group version: %d", rec.Code)
	}
	// The documents are generated once: the same bytes every time.
	a, b := get(t, urls["api/v1"], nil).Body.String(), get(t, urls["api/v1"], nil).Body.String()
	if a != b {
		t.Errorf("document changed between requests")
	}
}

func v3Schemas(t *testing.T, key string) (map[string]map[string]any, map[string]map[string]any) {
	t.Helper()
	rec := get(t, v3Index(t)[key], nil)
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas, doc.Paths
}

func TestV3Schemas(t *testing.T) {
	schemas, paths := v3Schemas(t, "api/v1")
	pod := schemas["io.k8s.api.core.v1.Pod"]
	gvk, _ := json.Marshal(pod["x-kubernetes-group-version-kind"])
	if string(gvk) != `[{"group":"","kind":"Pod","version":"v1"}]` {
		t.Errorf("Pod gvk = %s", gvk)
	}
	props := func(name string) map[string]any {
		p, _ := schemas[name]["properties"].(map[string]any)
		return p
	}
	containers := props("io.k8s.api.core.v1.PodSpec")["containers"].(map[string]any)
	if containers["type"] != "array" || containers["x-kubernetes-patch-merge-key"] != "name" || containers["x-kubernetes-patch-strategy"] != "merge" {
		t.Errorf("PodSpec.containers = %v", containers)
	}
	required, _ := json.Marshal(schemas["io.k8s.api.core.v1.Container"]["required"])
	if string(required) != `["name"]` {
		t.Errorf("Container required = %s", required)
	}
	if q := schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]; q["x-kubernetes-int-or-string"] != true {
		t.Errorf("Quantity = %v", q)
	}
	if q := schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]; q["x-kubernetes-int-or-string"] != true {
		t.Errorf("IntOrString = %v", q)
	}
	if tm := schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]; tm["type"] != "string" || tm["format"] != "date-time" {
		t.Errorf("Time = %v", tm)
	}
	meta := props("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
	if labels := meta["labels"].(map[string]any); labels["type"] != "object" || labels["additionalProperties"].(map[string]any)["type"] != "string" {
		t.Errorf("ObjectMeta.labels = %v", labels)
	}
	if d, _ := props("io.k8s.api.core.v1.Pod")["spec"].(map[string]any)["description"].(string); !strings.Contains(d, "desired behavior of the pod") {
		t.Errorf("Pod.spec description = %q", d)
	}
	// Every write operation of a kind names it and takes fieldValidation.
	patch := paths["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"].(map[string]any)
	if g, _ := json.Marshal(patch["x-kubernetes-group-version-kind"]); string(g) != `{"group":"","kind":"Pod","version":"v1"}` {
		t.Errorf("pod PATCH gvk = %s", g)
	}
	for path, item := range paths {
		for _, method := range []string{"post", "put", "patch"} {
			o, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			found := false
			for _, p := range o["parameters"].([]any) {
				found = found || p.(map[string]any)["name"] == "fieldValidation"
			}
			if !found {
				t.Errorf("%s %s lacks the fieldValidation parameter", method, path)
			}
		}
	}
	for _, p := range []string{"/api/v1/nodes/{name}/status", "/api/v1/namespaces/{name}/finalize", "/api/v1/namespaces/{namespace}/pods/{name}/eviction",
		"/api/v1/namespaces/{namespace}/pods/{name}/binding", "/api/v1/pods", "/api/v1/namespaces/{namespace}/pods"} {
		if _, ok := paths[p]; !ok {
			t.Errorf("no path %s", p)
		}
	}
	appsSchemas, appsPaths := v3Schemas(t, "apis/apps/v1")
	if _, ok := appsSchemas["io.k8s.api.apps.v1.Deployment"]; !ok {
		t.Errorf("apps/v1 has no Deployment schema")
	}
	scale := appsPaths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"].(map[string]any)
	if g, _ := json.Marshal(scale["x-kubernetes-group-version-kind"]); string(g) != `{"group":"autoscaling","kind":"Scale","version":"v1"}` {
		t.Errorf("scale PATCH gvk = %s", g)
	}
}

func TestV2JSONAndProtobuf(t *testing.T) {
	rec := get(t, "/openapi/v2", nil)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi/v2: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	var doc struct {
		Swagger     string                    `json:"swagger"`
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.Swagger != "2.0" {
		t.Fatalf("v2 json: %v %q", err, doc.Swagger)
	}
	for _, name := range []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment", "io.k8s.api.coordination.v1.Lease", "io.k8s.api.autoscaling.v1.Scale"} {
		if _, ok := doc.Definitions[name]["x-kubernetes-group-version-kind"]; !ok {
			t.Errorf("v2 definition %s missing or without gvk", name)
		}
	}
	etag := rec.Header().Get("ETag")
	if rec := get(t, "/openapi/v2", map[string]string{"If-None-Match": etag}); rec.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", rec.Code)
	}

	// client-go's discovery asks for protobuf and decodes it with gnostic.
	rec = get(t, "/openapi/v2", map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
	if rec.Header().Get("Content-Type") != v2ProtoMime {
		t.Fatalf("protobuf content type = %q", rec.Header().Get("Content-Type"))
	}
	var pb openapi_v2.Document
	if err := proto.Unmarshal(rec.Body.Bytes(), &pb); err != nil {
		t.Fatalf("decode protobuf: %v", err)
	}
	found := false
	for _, def := range pb.GetDefinitions().GetAdditionalProperties() {
		found = found || def.GetName() == "io.k8s.api.core.v1.Pod"
	}
	if pb.GetSwagger() != "2.0" || !found {
		t.Errorf("protobuf document: swagger=%q, Pod found=%v", pb.GetSwagger(), found)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/openapi/v2", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

func BenchmarkBuild(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := build(); err != nil {
			b.Fatal(err)
		}
	}
}
