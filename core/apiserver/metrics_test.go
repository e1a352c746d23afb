package apiserver

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

func TestMetricLabelsFollowUpstream(t *testing.T) {
	pods := &registry.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods")}
	deploys := &registry.Resource{GVR: appsv1.SchemeGroupVersion.WithResource("deployments")}
	nodes := &registry.Resource{GVR: corev1.SchemeGroupVersion.WithResource("nodes")}
	cases := []struct {
		name   string
		verb   string
		ri     handlers.RequestInfo
		dryRun []string
		want   requestLabels
	}{
		{"get named pod", "GET", handlers.RequestInfo{Verb: "get", Resource: pods, Namespace: "a", Name: "p"}, nil,
			requestLabels{verb: "GET", version: "v1", resource: "pods", scope: "resource"}},
		{"create is resource scoped", "POST", handlers.RequestInfo{Verb: "create", Resource: pods, Namespace: "a"}, []string{"All"},
			requestLabels{verb: "POST", dryRun: "All", version: "v1", resource: "pods", scope: "resource"}},
		{"list in a namespace", "LIST", handlers.RequestInfo{Verb: "list", Resource: deploys, Namespace: "a"}, nil,
			requestLabels{verb: "LIST", group: "apps", version: "v1", resource: "deployments", scope: "namespace"}},
		{"watch across namespaces", "WATCH", handlers.RequestInfo{Verb: "watch", Resource: pods}, nil,
			requestLabels{verb: "WATCH", version: "v1", resource: "pods", scope: "cluster"}},
		{"node status", "PATCH", handlers.RequestInfo{Verb: "patch", Resource: nodes, Name: "n1", Subresource: "status"}, nil,
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
