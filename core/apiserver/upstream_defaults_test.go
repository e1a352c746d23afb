package apiserver_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// Defaults a kubectl user sees on an upstream cluster: namespaces carry their name as the
// kubernetes.io/metadata.name label (used by namespace selectors), services their IP
// families.
func TestKubectlNamespaceLabelAndServiceFamilies(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)

	k.ok("create", "namespace", "team-a")
	for _, ns := range []string{"team-a", "default", "kube-system"} {
		if out := k.ok("get", "namespace", ns, "-o", "jsonpath={.metadata.labels.kubernetes\\.io/metadata\\.name}"); out != ns {
			t.Errorf("namespace %s name label = %q", ns, out)
		}
	}
	// The label follows the name even when a user removes or changes it.
	k.ok("label", "namespace", "team-a", "kubernetes.io/metadata.name=other", "--overwrite")
	if out := k.ok("get", "namespace", "-l", "kubernetes.io/metadata.name=team-a", "-o", "name"); strings.TrimSpace(out) != "namespace/team-a" {
		t.Errorf("selecting the namespace by its name label: %q", out)
	}

	k.ok("create", "service", "clusterip", "web", "--tcp=80:8080")
	if out := k.ok("get", "service", "web", "-o", "jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies}"); out != `SingleStack ["IPv4"]` {
		t.Errorf("service IP families: %q", out)
	}
	if out := k.ok("describe", "service", "web"); !strings.Contains(out, "IP Families:              IPv4") ||
		!strings.Contains(out, "IP Family Policy:         SingleStack") {
		t.Errorf("describe service:\n%s", out)
	}
	k.ok("create", "service", "clusterip", "headless", "--clusterip=None")
	if out := k.ok("get", "service", "headless", "-o", "jsonpath={.spec.ipFamilyPolicy}"); out != "SingleStack" {
		// kubectl create service gives it the selector app=headless
		t.Errorf("headless service with a selector: policy %q", out)
	}
}

// `kubectl get --raw /metrics` shows the request counter with upstream's labels.
func TestKubectlMetricsCarryUpstreamLabels(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	k.ok("create", "namespace", "metrics-a")
	k.ok("get", "deployments", "-n", "metrics-a")
	out := k.ok("get", "--raw", "/metrics")
	want := `apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="namespace",subresource="",verb="LIST",version="v1"}`
	if !strings.Contains(out, want) {
		t.Fatalf("no %s in\n%s", want, grepLines(out, "apiserver_request_total"))
	}
	if !strings.Contains(out, `apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="POST",version="v1"`) {
		t.Fatalf("no namespace create latency in\n%s", grepLines(out, "apiserver_request_duration_seconds_count"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// `kubectl get --subresource=status|scale` print upstream's columns: the parent's for
// status, NAME DESIRED AVAILABLE for scale.
func TestKubectlGetSubresourceColumns(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	k.ok("create", "-f", k.file("p.yaml", fmt.Sprintf(podManifest, "p", "p", "busybox")))
	out := k.ok("get", "pod", "p", "--subresource=status")
	if h := header(out); h != "NAME READY STATUS RESTARTS AGE" {
		t.Errorf("pods/status header %q:\n%s", h, out)
	}
	k.ok("create", "deployment", "d", "--image=busybox", "--replicas=3")
	out = k.ok("get", "deployment", "d", "--subresource=scale")
	if h := header(out); h != "NAME DESIRED AVAILABLE" {
		t.Errorf("deployments/scale header %q:\n%s", h, out)
	}
	if row := strings.Fields(strings.Split(out, "\n")[1]); len(row) != 3 || row[0] != "d" || row[1] != "3" {
		t.Errorf("deployments/scale row %q", row)
	}
	if out := k.ok("get", "deployment", "d", "--subresource=scale", "-o", "jsonpath={.kind} {.spec.replicas}"); out != "Scale 3" {
		t.Errorf("scale as an object: %q", out)
	}
}

// `kubectl replace -f` from the manifest a pod was created from (no tolerations, no
// resourceVersion) works as upstream: the default tolerations are added again rather than
// read as removed.
func TestKubectlReplacePodFromItsManifest(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	// The service account named and its token not mounted: the ServiceAccount admission
	// sets serviceAccountName and adds the token's projected volume on create only (as
	// upstream's does), so a replace from a manifest without them changes the spec, which
	// a pod update may not (upstream refuses it too).
	manifest := podManifest + "  serviceAccountName: default\n  automountServiceAccountToken: false\n"
	k.ok("create", "-f", k.file("p.yaml", fmt.Sprintf(manifest, "p", "v1", "busybox")))
	out := k.ok("replace", "-f", k.file("p2.yaml", fmt.Sprintf(manifest, "p", "v2", "busybox")))
	if !strings.Contains(out, "pod/p replaced") {
		t.Fatalf("replace: %s", out)
	}
	if got := k.ok("get", "pod", "p", "-o", "jsonpath={.metadata.labels.app} {.spec.tolerations[*].key}"); got != "v2 node.kubernetes.io/not-ready node.kubernetes.io/unreachable" {
		t.Fatalf("after replace: %q", got)
	}
}

// Namespaces cannot be deleted as a collection (405, as upstream): one request must not
// empty the cluster, and discovery does not offer it.
func TestNamespacesHaveNoDeleteCollection(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	k.ok("create", "namespace", "aaa")
	code, st := rawRequest(t, srv, "DELETE", "/api/v1/namespaces", "", nil)
	if code != 405 || !strings.Contains(st.Message, "not supported") {
		t.Fatalf("DELETE /api/v1/namespaces: %d %q", code, st.Message)
	}
	if out := k.ok("get", "namespace", "aaa", "-o", "jsonpath={.status.phase}"); out != "Active" {
		t.Fatalf("namespace aaa after the refused collection delete: %q", out)
	}
	out := k.ok("api-resources", "-o", "wide")
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "namespaces" && strings.Contains(l, "deletecollection") {
			t.Errorf("discovery offers deletecollection on namespaces: %s", l)
		}
		// The core group's pods (kind Pod), not metrics.k8s.io's PodMetrics or the
		// decision explorer's read-only PodDecisions.
		if len(f) > 0 && f[0] == "pods" && slices.Contains(f, "Pod") && !strings.Contains(l, "deletecollection") {
			t.Errorf("discovery lost deletecollection on pods: %s", l)
		}
	}
}
