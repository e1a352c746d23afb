package apiserver

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

func TestMetricLabelsFollowUpstream(t *testing.T) {
	pods := &registry.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods")}
	deploys := &registry.Resource{GVR: appsv1.SchemeGroupVersion.WithResource("deployments")}
	nodes := &registry.Resource{GVR: corev1.SchemeGroupVersion.WithResource("nodes")}
	cases := []struct {
		name   string
		verb   string
		ri     requestInfo
		dryRun []string
		want   requestLabels
	}{
		{"get named pod", "GET", requestInfo{verb: "get", res: pods, namespace: "a", name: "p"}, nil,
			requestLabels{verb: "GET", version: "v1", resource: "pods", scope: "resource"}},
		{"create is resource scoped", "POST", requestInfo{verb: "create", res: pods, namespace: "a"}, []string{"All"},
			requestLabels{verb: "POST", dryRun: "All", version: "v1", resource: "pods", scope: "resource"}},
		{"list in a namespace", "LIST", requestInfo{verb: "list", res: deploys, namespace: "a"}, nil,
			requestLabels{verb: "LIST", group: "apps", version: "v1", resource: "deployments", scope: "namespace"}},
		{"watch across namespaces", "WATCH", requestInfo{verb: "watch", res: pods}, nil,
			requestLabels{verb: "WATCH", version: "v1", resource: "pods", scope: "cluster"}},
		{"node status", "PATCH", requestInfo{verb: "patch", res: nodes, name: "n1", subresource: "status"}, nil,
			requestLabels{verb: "PATCH", version: "v1", resource: "nodes", subresource: "status", scope: "resource"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := labelsFor(c.verb, &c.ri, c.dryRun); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
