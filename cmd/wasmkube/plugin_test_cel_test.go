package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// The same case file, run by `plugin test` against a wasm policy and against its CEL
// twin (a file of a ValidatingAdmissionPolicy and its binding), agrees; a case the CEL
// policy answers otherwise fails with the difference and a non-zero exit; a scheduling
// case given to CEL policies fails saying why.
func TestPluginTestCELPolicies(t *testing.T) {
	ctx := context.Background()
	wasm := wasmbuild.Go(t, "wasm-examples/go/require-labels")
	vap := filepath.Join(wasmbuild.Root(), "wasm-examples/cel-equivalents/require-labels.yaml")
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// the VAP takes namespaces labelled wasmkube.io/require-team=true (the wasm policy's
	// namespaceSelector is in its config, not the module): the case gives the namespace
	cases := write("cases.yaml", `
args: {"labels": ["team"]}
cases:
- name: a pod without the label is refused
  request:
    object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: shop}, spec: {containers: [{name: c, image: busybox}]}}
  objects:
  - {apiVersion: v1, kind: Namespace, metadata: {name: shop, labels: {wasmkube.io/require-team: "true"}}}
  expect: {allowed: false, message: 'pods "web" must carry label team'}
- name: a pod with the label is admitted
  request:
    object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: shop, labels: {team: a}}, spec: {containers: [{name: c, image: busybox}]}}
  objects:
  - {apiVersion: v1, kind: Namespace, metadata: {name: shop, labels: {wasmkube.io/require-team: "true"}}}
  expect: {allowed: true}
`)
	o := &kitOptions{memoryLimit: "64Mi", output: "text"}
	for _, policy := range []string{wasm, vap} {
		var out bytes.Buffer
		if err := runPluginTest(ctx, &out, policy, []string{cases}, o); err != nil || !strings.Contains(out.String(), "2 passed, 0 failed") {
			t.Fatalf("plugin test %s cases.yaml: %v\n%s", filepath.Base(policy), err, out.String())
		}
	}

	// where the two differ: outside a labelled namespace the VAP does not match
	unlabelled := write("unlabelled.yaml", `
cases:
- name: refused in an unlabelled namespace too
  request:
    object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: free}, spec: {containers: [{name: c, image: busybox}]}}
  objects:
  - {apiVersion: v1, kind: Namespace, metadata: {name: free}}
  expect: {allowed: false}
- name: a scheduling cycle
  pod: {metadata: {name: p}}
  nodes: [{metadata: {name: n1}}]
  expect: {feasible: [n1]}
`)
	var out bytes.Buffer
	err := runPluginTest(ctx, &out, vap, []string{unlabelled}, o)
	if err == nil || !strings.Contains(out.String(), "want the request denied, it was allowed") ||
		!strings.Contains(out.String(), "CEL policies (ValidatingAdmissionPolicy, MutatingAdmissionPolicy) judge admission requests only") {
		t.Fatalf("failing cases against the VAP: %v\n%s", err, out.String())
	}
}
