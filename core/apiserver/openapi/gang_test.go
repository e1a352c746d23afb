package openapi

import (
	"encoding/json"
	"testing"
)

// A pointer field without omitempty is optional, as upstream marks it: kubectl's
// client-side validation accepted a Workload template without schedulingConstraints only
// once it was.
func TestGangSchemasRequireWhatUpstreamRequires(t *testing.T) {
	schemas, _ := v3Schemas(t, "apis/scheduling.k8s.io/v1beta1")
	for name, want := range map[string]string{
		"io.k8s.api.scheduling.v1beta1.PodGroupTemplate": `["name","schedulingPolicy"]`,
		"io.k8s.api.scheduling.v1beta1.PodGroupSpec":     `["schedulingPolicy"]`,
	} {
		got, _ := json.Marshal(schemas[name]["required"])
		if string(got) != want {
			t.Errorf("%s required = %s, want %s", name, got, want)
		}
	}
}
