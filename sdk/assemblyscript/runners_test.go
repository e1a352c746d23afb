package assdk_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// The admission runners and bindings through the API server's host: a Mutate's patch,
// warning and the object it sees; a Validate's denial and audit annotation.
func TestAdmissionRunners(t *testing.T) {
	p := admitwasmtest.Load(t, "admission", wasmbuild.Script(t, "sdk/assemblyscript/testdata/admission"), "")
	pod := func(name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}}}
	}
	r := p.Run(t, admitwasmtest.CreatePod(pod("web")))
	if r.Err != nil || !r.Allowed || r.Object.(*v1.Pod).Labels["defaulted"] != "yes" {
		t.Errorf("web: allowed=%v %q err=%v labels %v, want allowed with defaulted=yes", r.Allowed, r.Message, r.Err, r.Object.(*v1.Pod).Labels)
	}
	if len(r.Warnings) != 1 || r.Warnings[0] != "labelled Pod web" {
		t.Errorf("web: warnings %q, want [labelled Pod web]", r.Warnings)
	}
	if len(r.AuditAnnotations) != 1 || r.AuditAnnotations[0].Key != "user" || r.AuditAnnotations[0].Value != "alice in system:authenticated" {
		t.Errorf("web: audit annotations %v, want user=alice in system:authenticated", r.AuditAnnotations)
	}
	r = p.Run(t, admitwasmtest.CreatePod(pod("bad")))
	if r.Err != nil || r.Allowed || r.Message != "metadata.name: bad is not allowed (CREATE)" {
		t.Errorf("bad: allowed=%v %q err=%v, want the denial", r.Allowed, r.Message, r.Err)
	}
}

// The PreStop runner and the kubelet bindings through the kubelet's host: http_post with a
// body, response_header, sleep_ms, and the pod's annotation.
func TestPreStopRunner(t *testing.T) {
	// The handler runs on the server's goroutines: what it sees and answers is behind mu.
	var mu sync.Mutex
	status, body := 200, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		body = r.Method + " " + r.URL.Path + " " + string(b)
		w.Header().Set("X-Drain", "busy")
		w.WriteHeader(status)
	}))
	defer srv.Close()
	p := nodewasmtest.Load(t, wasmbuild.Script(t, "sdk/assemblyscript/testdata/kubelet"), "")
	p.Pod = p.Pod.DeepCopy()
	p.Pod.Annotations = map[string]string{"port": fmt.Sprint(nodewasmtest.Port(t, srv))}
	if r := p.PreStop(t, time.Second); r.Err != nil || r.Code != 0 {
		t.Errorf("200: code %d %q (%v), want done", r.Code, r.Reason, r.Err)
	}
	mu.Lock()
	if want := "POST /drain app@" + nodewasmtest.PodIP; body != want {
		t.Errorf("the server got %q, want %q", body, want)
	}
	status = 503
	mu.Unlock()
	if r := p.PreStop(t, time.Second); r.Code != 1 || !strings.Contains(r.Reason+fmt.Sprint(r.Err), "drain: 503 busy") {
		t.Errorf("503: code %d %q (%v), want the error with the X-Drain header", r.Code, r.Reason, r.Err)
	}
}
