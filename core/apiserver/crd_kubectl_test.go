package apiserver_test

import (
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// widgetCRD has two served versions (v1 stores), a schema with types, required fields,
// an enum, a pattern, bounds, a default and a CEL rule, the status and scale
// subresources and printer columns.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Size, type: string, jsonPath: .spec.size}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - rule: "self.replicas <= self.maxReplicas"
              message: "replicas must not exceed maxReplicas"
            properties:
              size: {type: string, enum: [small, large]}
              color: {type: string, pattern: '^[a-z]+$'}
              replicas: {type: integer, minimum: 0, maximum: 10, default: 1}
              maxReplicas: {type: integer, default: 5}
          status:
            type: object
            properties:
              replicas: {type: integer}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

const clusterCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: gadgets, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {n: {type: integer}}}
`

func TestCRDWithKubectl(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	k.ok("apply", "-f", k.file("crd.yaml", widgetCRD))
	k.ok("apply", "-f", k.file("crd2.yaml", clusterCRD))
	k.ok("wait", "--for", "condition=established", "--timeout=60s", "crd/widgets.example.com")

	// Valid object: defaults applied, unknown fields pruned, printer columns shown.
	k.ok("apply", "--validate=false", "-f", k.file("w.yaml", `apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: small, color: red, bogus: 1}
`))
	if out := k.ok("get", "widgets", "w1", "-o", "jsonpath={.spec.replicas}/{.spec.maxReplicas}/{.spec.bogus}"); out != "1/5/" {
		t.Errorf("defaults and pruning: got %q, want 1/5/", out)
	}
	out := k.ok("get", "wg")
	if !strings.Contains(out, "SIZE") || !strings.Contains(out, "REPLICAS") || !strings.Contains(out, "small") {
		t.Errorf("printer columns missing from kubectl get:\n%s", out)
	}
	// kubectl's default --validate=strict: the unknown field is refused, naming it.
	if out, err := k.run("apply", "-f", k.file("w2.yaml", `apiVersion: example.com/v1
kind: Widget
metadata: {name: w2}
spec: {size: small, bogus: 1}
`)); err == nil || !strings.Contains(out, "bogus") {
		t.Errorf("strict validation of an unknown field: err=%v\n%s", err, out)
	}

	// Invalid objects are refused, with the field named.
	for _, c := range []struct{ spec, want string }{
		{`{color: red}`, "spec.size: Required value"},
		{`{size: huge}`, `spec.size: Unsupported value: "huge"`},
		{`{size: small, color: "Red1"}`, "spec.color: Invalid value"},
		{`{size: small, replicas: 11, maxReplicas: 20}`, "spec.replicas: Invalid value: 11"},
		{`{size: small, replicas: 4, maxReplicas: 3}`, "replicas must not exceed maxReplicas"},
		{`{size: 3}`, "spec.size: Invalid value"},
	} {
		out, err := k.run("apply", "-f", k.file("bad.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: bad}\nspec: "+c.spec+"\n"))
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("spec %s: want an error with %q, got err=%v\n%s", c.spec, c.want, err, out)
		}
	}

	// The other served version reads the same object (None conversion).
	if out := k.ok("get", "widgets.v1beta1.example.com", "w1", "-o", "jsonpath={.apiVersion} {.spec.size}"); out != "example.com/v1beta1 small" {
		t.Errorf("v1beta1 view: got %q", out)
	}
	// Status and scale subresources.
	k.ok("scale", "widget/w1", "--replicas=3")
	if out := k.ok("get", "widget", "w1", "-o", "jsonpath={.spec.replicas}"); out != "3" {
		t.Errorf("after kubectl scale: replicas %q", out)
	}
	k.ok("patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":3}}`)
	// A main-resource write does not change status.
	k.ok("patch", "widget", "w1", "--type=merge", "-p", `{"spec":{"color":"blue"},"status":{"replicas":9}}`)
	if out := k.ok("get", "widget", "w1", "-o", "jsonpath={.status.replicas} {.spec.color} {.metadata.generation}"); out != "3 blue 3" {
		t.Errorf("status/spec/generation: got %q, want 3 blue 3", out)
	}
	if out := k.ok("get", "--subresource=scale", "widget", "w1"); !strings.Contains(out, "3") {
		t.Errorf("scale subresource:\n%s", out)
	}

	// Cluster-scoped kind.
	k.ok("apply", "-f", k.file("g.yaml", "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1}\nspec: {n: 2}\n"))
	if out := k.ok("get", "gadgets"); !strings.Contains(out, "g1") {
		t.Errorf("cluster-scoped custom object:\n%s", out)
	}
	if out := k.ok("api-resources", "--api-group=example.com"); !strings.Contains(out, "widgets") || !strings.Contains(out, "wg") || !strings.Contains(out, "gadgets") {
		t.Errorf("discovery:\n%s", out)
	}
	if out := k.ok("explain", "widget.spec"); !strings.Contains(out, "maxReplicas") {
		t.Errorf("kubectl explain (OpenAPI v3):\n%s", out)
	}

	// Deleting the CRD deletes its objects; a new CRD of the same name starts empty.
	k.ok("delete", "crd", "widgets.example.com", "--timeout=60s")
	if out, err := k.run("get", "crd", "widgets.example.com"); err == nil {
		t.Errorf("CRD still there after delete:\n%s", out)
	}
	k.ok("apply", "-f", k.file("crd.yaml", widgetCRD))
	k.ok("wait", "--for", "condition=established", "--timeout=60s", "crd/widgets.example.com")
	if out := k.ok("get", "widgets", "-A", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("objects survived their CRD: %q", out)
	}
}
