package apiserver_test

import (
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestKubectlPruneDumpAndPolicyKinds: with the real kubectl and default flags, `apply
// --prune` finds every kind of its default allowlist and prunes what left the manifest,
// `cluster-info dump` works, and the policy, ingress and network-policy kinds are served
// and validated with the field named.
func TestKubectlPruneDumpAndPolicyKinds(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	const cmA = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default, labels: {app: prune}}\ndata: {k: v}\n"
	const cmB = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: default, labels: {app: prune}}\ndata: {k: v}\n"
	out := k.ok("apply", "--prune", "-l", "app=prune", "-f", k.file("both.yaml", cmA+"---\n"+cmB))
	if !strings.Contains(out, "configmap/a created") || !strings.Contains(out, "configmap/b created") {
		t.Fatalf("apply --prune (create):\n%s", out)
	}
	out = k.ok("apply", "--prune", "-l", "app=prune", "-f", k.file("a.yaml", cmA))
	if !strings.Contains(out, "configmap/b pruned") {
		t.Fatalf("apply --prune did not prune configmap b:\n%s", out)
	}
	if out, err := k.run("get", "configmap", "b", "-n", "default"); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("configmap b still there after prune: %v\n%s", err, out)
	}

	out = k.ok("cluster-info", "dump", "--namespaces", "default,kube-system")
	for _, want := range []string{`"kind": "NodeList"`, `"kind": "ReplicationControllerList"`, `"kind": "EventList"`, `"kind": "DeploymentList"`} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster-info dump lacks %s:\n%.2000s", want, out)
		}
	}

	out = k.ok("apply", "-f", k.file("policy.yaml", `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: example.com/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default}
spec:
  ingressClassName: nginx
  rules:
  - host: web.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: default}
spec:
  podSelector: {matchLabels: {app: web}}
  egress: [{ports: [{port: 53}]}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}
`))
	for _, want := range []string{"ingressclass.networking.k8s.io/nginx created", "ingress.networking.k8s.io/web created", "networkpolicy.networking.k8s.io/deny created", "poddisruptionbudget.policy/web created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply lacks %q:\n%s", want, out)
		}
	}
	if got := header(k.ok("get", "ingress", "-n", "default")); got != "NAME CLASS HOSTS ADDRESS PORTS AGE" {
		t.Errorf("ingress columns: %q", got)
	}
	if got := k.ok("get", "netpol", "deny", "-n", "default", "-o", "jsonpath={.spec.policyTypes} {.spec.egress[0].ports[0].protocol}"); got != `["Ingress","Egress"] TCP` {
		t.Errorf("network policy defaults: %q", got)
	}
	out, err := k.run("apply", "-f", k.file("bad.yaml", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bad, namespace: default}
spec:
  rules:
  - http:
      paths:
      - {path: relative, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
`))
	if err == nil || !strings.Contains(out, "spec.rules[0].http.paths[0].path") || !strings.Contains(out, "must be an absolute path") {
		t.Errorf("bad ingress: %v\n%s", err, out)
	}
	out, err = k.run("apply", "-f", k.file("badpdb.yaml", `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: bad, namespace: default}
spec: {minAvailable: 1, maxUnavailable: 1, selector: {}}
`))
	if err == nil || !strings.Contains(out, "minAvailable and maxUnavailable cannot be both set") {
		t.Errorf("bad budget: %v\n%s", err, out)
	}
	out, err = k.run("create", "priorityclass", "system-mine", "--value=5")
	if err == nil || !strings.Contains(out, "priority class names with 'system-' prefix are reserved") {
		t.Errorf("reserved priority class name: %v\n%s", err, out)
	}
}
