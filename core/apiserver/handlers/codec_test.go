package handlers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNegotiate(t *testing.T) {
	cases := []struct {
		accept string
		want   OutputFormat
		err    bool
	}{
		{"", OutJSON, false},
		{"application/json", OutJSON, false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", OutTable, false},
		{"application/vnd.kubernetes.protobuf,application/json", outProtobuf, false},
		{"application/vnd.kubernetes.protobuf;as=Table,application/json", OutJSON, false},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json", outPartial, false},
		{"application/json;as=Table;v=v2;g=meta.k8s.io,application/json", OutJSON, false},
		{"application/yaml", outYAML, false},
		{"*/*", OutJSON, false},
		{"text/html", 0, true},
	}
	for _, c := range cases {
		got, err := Negotiate(c.accept)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("negotiate(%q) = %v, %v; want %v (err %v)", c.accept, got, err, c.want, c.err)
		}
	}
}

// A table row carries PartialObjectMetadata by default, the object for includeObject=Object,
// and nothing for None; tables of lists and of /scale share this.
func TestTableRowObject(t *testing.T) {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	for include, want := range map[string]string{
		"":       `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p","namespace":"ns"}}`,
		"Object": `"nodeName":"n1"`,
		"None":   "",
	} {
		got, err := TableRowObject(pod, include)
		if err != nil {
			t.Fatalf("includeObject=%q: %v", include, err)
		}
		if want == "" && got.Raw != nil || want != "" && !strings.Contains(string(got.Raw), want) {
			t.Errorf("includeObject=%q: row object %s, want it to contain %s", include, got.Raw, want)
		}
	}
}
