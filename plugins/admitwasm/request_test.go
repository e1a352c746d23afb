package admitwasm

import (
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// The AdmissionRequest of request_json is admission.k8s.io/v1 with both objects carrying
// apiVersion and kind; the pod functions' copy never reaches the JSON cache under the
// stored resourceVersion.
func TestRequestJSON(t *testing.T) {
	old := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", ResourceVersion: "7", Labels: map[string]string{"v": "1"}}}
	cur := old.DeepCopy()
	cur.Labels["v"] = "2"
	a := &admission.Attributes{Operation: admission.Update, Kind: v1.SchemeGroupVersion.WithKind("Pod"), Resource: v1.SchemeGroupVersion.WithResource("pods"),
		Namespace: "shop", Name: "web", Object: cur, OldObject: old, User: admission.UserInfo{Name: "alice", Groups: []string{"devs"}}, DryRun: true}
	r := NewRequest(a)
	var ar admissionv1.AdmissionRequest
	if err := json.Unmarshal(r.request(), &ar); err != nil {
		t.Fatal(err)
	}
	if ar.UID == "" || ar.UID != r.UID() || ar.Kind.Kind != "Pod" || ar.Resource.Resource != "pods" || ar.RequestKind.Kind != "Pod" ||
		ar.Name != "web" || ar.Namespace != "shop" || ar.Operation != admissionv1.Update || ar.UserInfo.Username != "alice" ||
		ar.UserInfo.Groups[0] != "devs" || ar.DryRun == nil || !*ar.DryRun {
		t.Fatalf("request %+v", ar)
	}
	for _, raw := range [][]byte{ar.Object.Raw, ar.OldObject.Raw} {
		if !strings.HasPrefix(string(raw), `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"`) {
			t.Fatalf("object %s", raw)
		}
	}
	if !strings.Contains(string(ar.Object.Raw), `"v":"2"`) || !strings.Contains(string(ar.OldObject.Raw), `"v":"1"`) {
		t.Fatal("objects swapped")
	}
	if string(ar.Options.Raw) != `{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1","dryRun":["All"]}` {
		t.Fatalf("options %s", ar.Options.Raw)
	}
	if p := r.pod(); p.ResourceVersion != "" || p.Labels["v"] != "2" {
		t.Fatalf("pod functions' pod: %+v", p.ObjectMeta)
	}
	d := NewRequest(&admission.Attributes{Operation: admission.Delete, OldObject: old})
	if p := d.pod(); p != old {
		t.Fatal("a DELETE's pod is the stored one")
	}
}
