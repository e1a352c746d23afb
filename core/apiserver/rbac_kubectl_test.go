package apiserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// until retries kubectl until its output contains want: RBAC objects reach the
// authorizer through a watch, a moment after the write returns (as upstream's informers).
func (k *kubectlRunner) until(want string, args ...string) string {
	k.t.Helper()
	var out string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		out, _ = k.run(args...)
		if strings.Contains(out, want) {
			return out
		}
	}
	k.t.Fatalf("kubectl %s: never printed %q; last:\n%s", strings.Join(args, " "), want, out)
	return ""
}

// fails runs kubectl, wants it to fail with output containing each of want.
func (k *kubectlRunner) fails(want []string, args ...string) {
	k.t.Helper()
	out, err := k.run(args...)
	if err == nil {
		k.t.Fatalf("kubectl %s succeeded, want a failure:\n%s", strings.Join(args, " "), out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			k.t.Fatalf("kubectl %s: output lacks %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
}

func canI(k *kubectlRunner, args ...string) string {
	out, _ := k.run(append([]string{"auth", "can-i"}, args...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// RBAC with real kubectl: a user bound to view reads but does not write, can-i --as
// answers for users and service accounts, escalation and impersonation are refused
// without the verbs, and a service account token bound to view works the same.
func TestKubectlRBAC(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("# token,user,uid,groups\nalice-token,alice,1\nbob-token,bob,2,\"team-b,devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := apiservertest.Start(t, apiservertest.WithTokenAuthFile(tokens))
	k := newKubectl(t, srv)
	alice := func(args ...string) []string { return append([]string{"--token", "alice-token"}, args...) }
	bob := func(args ...string) []string { return append([]string{"--token", "bob-token"}, args...) }

	// The default roles are there; view's rules are aggregated from system:aggregate-to-view.
	k.until(`"pods"`, "get", "clusterrole", "view", "-o", "jsonpath={.rules}")
	for _, name := range []string{"cluster-admin", "admin", "edit", "system:kube-scheduler", "system:kube-controller-manager", "system:node"} {
		k.ok("get", "clusterrole", name)
	}

	// alice has nothing yet but asking about herself.
	if got := k.ok(alice("auth", "whoami")...); !strings.Contains(got, "alice") || !strings.Contains(got, "system:authenticated") {
		t.Fatalf("whoami alice:\n%s", got)
	}
	k.fails([]string{"forbidden", `User "alice" cannot list resource "pods" in API group "" in the namespace "default"`}, alice("get", "pods")...)

	k.ok("create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice", "-n", "default")
	k.until("No resources found", alice("get", "pods")...)
	k.fails([]string{"forbidden", `cannot create resource "configmaps"`}, alice("create", "configmap", "c1", "--from-literal=a=b")...)
	k.fails([]string{"forbidden"}, alice("get", "pods", "-n", "kube-system")...)
	if got := canI(k, "list", "pods", "--as", "alice"); got != "yes" {
		t.Errorf("can-i list pods --as alice: %q", got)
	}
	if got := canI(k, "create", "pods", "--as", "alice"); got != "no" {
		t.Errorf("can-i create pods --as alice: %q", got)
	}
	if got := k.ok(alice("auth", "can-i", "--list")...); !strings.Contains(got, "pods ") || !strings.Contains(got, "[get list watch]") {
		t.Errorf("alice can-i --list:\n%s", got)
	}

	// Escalation: bob may manage roles and bindings in default, but not grant more than he has.
	k.ok("create", "role", "rbac-manager", "-n", "default", "--verb=get,list,watch,create,update,patch,delete", "--resource=roles,rolebindings")
	k.ok("create", "rolebinding", "bob-rbac", "--role=rbac-manager", "--group=team-b", "-n", "default")
	k.until("yes", bob("auth", "can-i", "create", "roles")...)
	k.ok(bob("create", "role", "role-reader", "-n", "default", "--verb=get,list", "--resource=roles")...)
	k.fails([]string{"forbidden", "attempting to grant RBAC permissions not currently held", "secrets"},
		bob("create", "role", "secret-admin", "-n", "default", "--verb=*", "--resource=secrets")...)
	k.fails([]string{"forbidden", "attempting to grant RBAC permissions not currently held"},
		bob("create", "rolebinding", "bob-admin", "--clusterrole=admin", "--user=bob", "-n", "default")...)
	// With bind on the view ClusterRole he may bind it without holding it.
	k.ok("create", "clusterrole", "bind-view", "--verb=bind", "--resource=clusterroles", "--resource-name=view")
	k.ok("create", "clusterrolebinding", "bob-bind-view", "--clusterrole=bind-view", "--user=bob")
	k.until("yes", bob("auth", "can-i", "bind", "clusterroles/view")...)
	k.ok(bob("create", "rolebinding", "carol-view", "--clusterrole=view", "--user=carol", "-n", "default")...)

	// Impersonation needs the impersonate verb.
	k.fails([]string{"forbidden", `cannot impersonate resource "users"`}, alice("get", "roles", "--as", "bob")...)
	k.ok("create", "clusterrole", "impersonate-bob", "--verb=impersonate", "--resource=users,groups", "--resource-name=bob", "--resource-name=team-b")
	k.ok("create", "clusterrolebinding", "alice-impersonate-bob", "--clusterrole=impersonate-bob", "--user=alice")
	k.until("role-reader", alice("get", "roles", "--as", "bob", "--as-group", "team-b")...)
	k.fails([]string{"forbidden", `cannot impersonate resource "groups"`}, alice("get", "roles", "--as", "bob", "--as-group", "system:masters")...)

	// A ServiceAccount bound to view lists but does not create, with its own token.
	k.ok("create", "serviceaccount", "robot", "-n", "default")
	k.ok("create", "rolebinding", "robot-view", "--clusterrole=view", "--serviceaccount=default:robot", "-n", "default")
	if got := canI(k, "list", "pods", "--as", "system:serviceaccount:default:robot"); got != "yes" {
		t.Errorf("can-i list pods --as the service account: %q", got)
	}
	if got := canI(k, "create", "pods", "--as", "system:serviceaccount:default:robot"); got != "no" {
		t.Errorf("can-i create pods --as the service account: %q", got)
	}
	saTok := strings.TrimSpace(k.ok("create", "token", "robot", "-n", "default"))
	k.until("No resources found", "--token", saTok, "get", "pods")
	k.fails([]string{"forbidden", `User "system:serviceaccount:default:robot" cannot create resource "configmaps"`},
		"--token", saTok, "create", "configmap", "c2", "--from-literal=a=b")
}

// The node authorizer with real kubectl: a node reads the config map its pod mounts and not
// another, lists only its own pods, and may not give its Node node-restriction labels.
func TestKubectlNodeAuthorizer(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	node := func(args ...string) []string {
		return append([]string{"--token", srv.NodeConfig(t, "n1").BearerToken}, args...)
	}
	k.ok("create", "configmap", "used", "--from-literal=a=b")
	k.ok("create", "configmap", "unused", "--from-literal=a=b")
	k.ok("create", "-f", k.file("p.yaml", `apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  nodeName: n1
  containers: [{name: c, image: busybox, envFrom: [{secretRef: {name: env-secret}}]}]
  volumes: [{name: v, configMap: {name: used}}]
`))
	k.ok("create", "-f", k.file("other.yaml", `apiVersion: v1
kind: Pod
metadata: {name: elsewhere}
spec:
  nodeName: n2
  containers: [{name: c, image: busybox}]
  volumes: [{name: v, configMap: {name: unused}}]
`))
	k.ok("create", "secret", "generic", "env-secret", "--from-literal=k=v")
	k.ok("create", "secret", "generic", "other-secret", "--from-literal=k=v")

	k.until("used", node("get", "configmap", "used", "-o", "name")...)
	k.fails([]string{"forbidden", `no relationship found between node "n1" and this object`}, node("get", "configmap", "unused")...)
	k.ok(node("get", "secret", "env-secret")...)
	k.fails([]string{"forbidden"}, node("get", "secret", "other-secret")...)
	k.fails([]string{"forbidden"}, node("get", "configmaps")...)
	// As upstream's node authorizer: a node lists only its own pods. (Its NetworkPolicy
	// enforcer has a credential of its own, docs/networkpolicy.md "Permissions".)
	k.fails([]string{"forbidden"}, node("get", "pods")...)
	if got := k.ok(node("get", "pods", "--field-selector", "spec.nodeName=n1", "-o", "name")...); strings.TrimSpace(got) != "pod/p1" {
		t.Fatalf("node's own pods: %q", got)
	}
	k.ok(node("get", "pod", "p1")...)
	k.fails([]string{"forbidden"}, node("get", "pod", "elsewhere")...)
	k.ok(node("get", "services")...)

	// NodeRestriction on its own Node.
	k.ok(node("create", "-f", k.file("n1.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {kubernetes.io/hostname: n1}}\n"))...)
	k.fails([]string{"forbidden", "node-restriction.kubernetes.io/pool"}, node("label", "node", "n1", "node-restriction.kubernetes.io/pool=gpu")...)
	k.ok(node("label", "node", "n1", "team=a")...)
	k.ok("label", "node", "n1", "node-restriction.kubernetes.io/pool=gpu") // the admin may
	k.ok("create", "-f", k.file("n2.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n2}\n"))
	k.fails([]string{"forbidden", "may only modify its own Node"}, node("label", "node", "n2", "team=a")...)
}
