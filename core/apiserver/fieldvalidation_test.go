package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestTypedFieldValidationLevels: a built-in object's unknown and duplicate fields are
// refused under fieldValidation=Strict, a warning under Warn, and silently dropped (the
// last duplicate kept) under Ignore, as upstream; Ignore is what `kubectl apply
// --validate=false` sends.
func TestTypedFieldValidationLevels(t *testing.T) {
	srv := apiservertest.Start(t)
	hc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	post := func(fv, name string) (int, []string, string) {
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"dataz":{"a":"b"},"data":{"k":"first"},"data":{"k":"last"}}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.Config.Host+"/api/v1/namespaces/default/configmaps?fieldValidation="+fv, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Values("Warning"), string(b)
	}

	if code, _, body := post("Strict", "strict"); code != http.StatusBadRequest || !strings.Contains(body, `unknown field \"dataz\"`) || !strings.Contains(body, `duplicate field \"data\"`) {
		t.Fatalf("Strict: got %d %s, want 400 naming the unknown and the duplicate field", code, body)
	}
	code, warned, body := post("Warn", "warn")
	got := strings.Join(warned, "; ") // 299 - "unknown field \"dataz\"" (RFC 7234 quoting)
	if code != http.StatusCreated || !strings.Contains(got, `unknown field \"dataz\"`) || !strings.Contains(got, `duplicate field \"data\"`) {
		t.Fatalf("Warn: got %d, warnings %q (%s), want 201 with both fields warned", code, got, body)
	}
	code, warned, body = post("Ignore", "ignore")
	if code != http.StatusCreated || len(warned) != 0 {
		t.Fatalf("Ignore: got %d, warnings %q (%s), want 201 without warnings", code, warned, body)
	}
	cm, err := srv.Client.CoreV1().ConfigMaps("default").Get(ctx, "ignore", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["k"] != "last" {
		t.Fatalf("Ignore: data.k = %q, want the last duplicate's value", cm.Data["k"])
	}
}
