package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

var (
	crdsGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// createCRD creates a CRD from YAML with the dynamic client and waits until its kind is
// served.
func createCRD(t testing.TB, dc dynamic.Interface, manifest string, gvr schema.GroupVersionResource) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := dc.Resource(crdsGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	// The server refreshes before it answers: the kind is served at once.
	if _, err := dc.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list %s right after creating its CRD: %v", gvr.Resource, err)
	}
}

func widget(name, size string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"size": size, "replicas": replicas, "maxReplicas": int64(10)},
	}}
}

// Custom objects are watchable by client-go's dynamic informers: adds, updates (status
// through /status) and deletes arrive, and an invalid write is refused as Invalid with
// the field named.
func TestCustomObjectsWithDynamicInformer(t *testing.T) {
	srv := apiservertest.Start(t)
	dc, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	createCRD(t, dc, widgetCRD, widgetsGVR)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := dc.Resource(widgetsGVR).Namespace("default")
	if _, err := res.Create(ctx, widget("before", "small", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, "default", nil)
	inf := factory.ForResource(widgetsGVR).Informer()
	events := make(chan string, 100)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { events <- "add " + o.(*unstructured.Unstructured).GetName() },
		UpdateFunc: func(_, o any) {
			u := o.(*unstructured.Unstructured)
			r, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
			if r > 0 {
				events <- "status " + u.GetName()
			}
		},
		DeleteFunc: func(o any) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				events <- "delete " + u.GetName()
			}
		},
	})
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }() // Shutdown waits for the informers to stop
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	expect := func(want string) {
		t.Helper()
		for {
			select {
			case got := <-events:
				if got == want {
					return
				}
			case <-ctx.Done():
				t.Fatalf("informer never saw %q", want)
			}
		}
	}
	expect("add before")
	w, err := res.Create(ctx, widget("w", "large", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("add w")
	if err := unstructured.SetNestedField(w.Object, int64(2), "status", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := res.UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	expect("status w")
	if err := res.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("delete w")

	_, err = res.Create(ctx, widget("bad", "medium", 1), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") {
		t.Fatalf("invalid custom object: want Invalid naming spec.size, got %v", err)
	}
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Details == nil || len(st.Status().Details.Causes) == 0 || st.Status().Details.Causes[0].Field != "spec.size" {
		t.Fatalf("invalid custom object: the Status should carry the field as a cause: %#v", err)
	}

	// Deleting the CRD deletes its objects: the informer sees them go.
	if err := dc.Resource(crdsGVR).Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("delete before")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dc.Resource(crdsGVR).Get(ctx, "widgets.example.com", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the CRD was not removed after its objects: %v", err)
	}
}

// A CRD that is not structural, or whose names do not match, is refused naming the field.
func TestInvalidCRDRefused(t *testing.T) {
	srv := apiservertest.Start(t)
	dc, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ manifest, want string }{
		{strings.Replace(widgetCRD, "name: widgets.example.com", "name: wrong.example.com", 1), "metadata.name"},
		{strings.Replace(widgetCRD, "storage: false", "storage: true", 1), "spec.versions"},
		{strings.Replace(widgetCRD, "size: {type: string, enum: [small, large]}", "size: {enum: [small, large]}", 1), "type: Required value"},
	} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(c.manifest), &u.Object); err != nil {
			t.Fatal(err)
		}
		_, err := dc.Resource(crdsGVR).Create(context.Background(), u, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want Invalid naming %q, got %v", c.want, err)
		}
	}
}

// helm install of a chart with a CRD in crds/ and a custom object of it in templates/.
func TestHelmInstallsChartWithCRD(t *testing.T) {
	srv := apiservertest.Start(t)
	helm := helmBinary(t)
	home := t.TempDir()
	chart := filepath.Join(home, "widgets")
	for name, content := range map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: widgets\nversion: 0.1.0\n",
		"crds/widget.yaml":  widgetCRD,
		"templates/w.yaml":  "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}-w\nspec:\n  size: small\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata: {a: b}\n",
		"values.yaml":       "{}\n",
	} {
		p := filepath.Join(chart, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := exec.Command(helm, "install", "demo", chart, "--kubeconfig", srv.KubeconfigPath)
	c.Dir = home
	c.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	dc, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	w, err := dc.Resource(widgetsGVR).Namespace("default").Get(context.Background(), "demo-w", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's custom object: %v", err)
	}
	if r, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); r != 1 {
		t.Errorf("the chart's custom object was not defaulted: %v", w.Object)
	}
}

// A custom object's body is decoded as upstream's serializer decodes unstructured
// objects: a duplicate field is refused under fieldValidation=Strict, a warning under
// Warn and silently the last value under Ignore; a body without kind is refused; integers
// stay integers for the schema's integer fields.
func TestCustomObjectBodyDecoding(t *testing.T) {
	srv := apiservertest.Start(t)
	dc, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	createCRD(t, dc, widgetCRD, widgetsGVR)
	hc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var warned []string // the last answer's Warning headers
	post := func(fv, body string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.Config.Host+"/apis/example.com/v1/namespaces/default/widgets?fieldValidation="+fv, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		warned = resp.Header.Values("Warning")
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode == http.StatusCreated {
			return err
		}
		// An error's body is the server's Status: keep its code, reason and message.
		var st metav1.Status
		if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" {
			return fmt.Errorf("status %d, body %s", resp.StatusCode, b)
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	dup := func(name string) string {
		return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":{"size":"huge","replicas":2,"size":"small"}}`
	}

	err = post("Strict", dup("strict"))
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `duplicate field`) || !strings.Contains(err.Error(), "size") {
		t.Fatalf("Strict, a duplicate spec.size: want BadRequest naming the duplicate field, got %v", err)
	}
	if _, err := dc.Resource(widgetsGVR).Namespace("default").Get(ctx, "strict", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused object was stored: %v", err)
	}

	if err := post("Warn", dup("warn")); err != nil {
		t.Fatalf("Warn, a duplicate spec.size: %v", err)
	}
	got := strings.Join(warned, "; ")
	if !strings.Contains(got, "duplicate field") || !strings.Contains(got, "size") {
		t.Fatalf("Warn, a duplicate spec.size: want a warning naming it, got %q", got)
	}

	if err := post("Ignore", dup("ignore")); err != nil {
		t.Fatalf("Ignore, a duplicate spec.size: %v", err)
	}
	got = strings.Join(warned, "; ")
	if got != "" {
		t.Fatalf("Ignore: want no warning, got %q", got)
	}
	for _, name := range []string{"warn", "ignore"} {
		u, err := dc.Resource(widgetsGVR).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The last value wins (as encoding/json), and replicas is still an integer.
		if size, _, _ := unstructured.NestedString(u.Object, "spec", "size"); size != "small" {
			t.Fatalf("%s: spec.size %q, want the last value small", name, size)
		}
		if r, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); !ok || r != 2 {
			t.Fatalf("%s: spec.replicas %#v, want the integer 2", name, u.Object["spec"])
		}
	}

	err = post("Strict", `{"apiVersion":"example.com/v1","metadata":{"name":"nokind"},"spec":{"size":"small"}}`)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "Kind' is missing") {
		t.Fatalf("a body without kind: want BadRequest, got %v", err)
	}
	err = post("Strict", `["not", "an", "object"]`)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "cannot be handled as a Widget") {
		t.Fatalf("a body that is not an object: want BadRequest, got %v", err)
	}
}
