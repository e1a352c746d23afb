package apiserver_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// as is a clientset for user, through the admin's impersonation.
func as(t *testing.T, srv *apiservertest.Server, user string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(srv.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// eventually retries fn until it returns nil: RBAC objects reach the authorizer through
// a watch, a moment after the write returns (as upstream's informers).
func eventually(t *testing.T, what string, fn func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = fn(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}

// A RoleBinding in namespace a that grants get on namespaces lets its subject read
// namespace a (the request is in namespace a, as upstream's RequestInfoFactory says), and
// no other namespace.
func TestNamespaceReadableThroughRoleBindingInIt(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	for _, ns := range []string{"a", "b"} {
		if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ns-reader", Namespace: "a"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"namespaces"}}}}
	if _, err := srv.Client.RbacV1().Roles("a").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-ns-reader", Namespace: "a"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ns-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
	if _, err := srv.Client.RbacV1().RoleBindings("a").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := as(t, srv, "alice")
	eventually(t, "alice gets namespace a", func() error {
		_, err := alice.CoreV1().Namespaces().Get(ctx, "a", metav1.GetOptions{})
		return err
	})
	_, err := alice.CoreV1().Namespaces().Get(ctx, "b", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `in the namespace "b"`) {
		t.Fatalf("alice gets namespace b: %v, want 403 naming the namespace", err)
	}
	if _, err := alice.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice lists namespaces: %v, want 403 (the binding grants get in a only)", err)
	}
}

// edit and admin hold upstream's rules on the streaming and proxy subresources (get for
// kubectl exec/attach/port-forward over WebSockets, create for SPDY), and every default
// ClusterRole of upstream's bootstrap policy exists.
func TestUpstreamDefaultRolesAndStreamingRules(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	for _, role := range []string{"edit", "admin"} {
		user := "user-" + role
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: "default"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		if _, err := srv.Client.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ verb, res, sub string }{
			{"get", "pods", "exec"}, {"create", "pods", "exec"},
			{"get", "pods", "attach"}, {"create", "pods", "attach"},
			{"get", "pods", "portforward"}, {"create", "pods", "portforward"},
			{"get", "pods", "proxy"}, {"create", "pods", "proxy"},
			{"get", "services", "proxy"}, {"create", "services", "proxy"},
			{"get", "secrets", ""},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: c.verb, Resource: c.res, Subresource: c.sub}}}
			eventually(t, role+" "+c.verb+" "+c.res+"/"+c.sub, func() error {
				out, err := srv.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
				if err != nil {
					return err
				}
				if !out.Status.Allowed {
					return &notAllowed{out.Status.Reason}
				}
				return nil
			})
		}
	}
	// Upstream's bootstrap ClusterRoles (plugin/pkg/auth/authorizer/rbac/bootstrappolicy),
	// without the per-controller system:controller:* roles.
	for _, name := range []string{
		"cluster-admin", "system:discovery", "system:monitoring", "system:basic-user", "system:public-info-viewer",
		"admin", "edit", "view", "system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view",
		"system:heapster", "system:node", "system:node-problem-detector", "system:kubelet-api-admin",
		"system:node-bootstrapper", "system:auth-delegator", "system:kube-aggregator", "system:kube-controller-manager",
		"system:kube-dns", "system:persistent-volume-provisioner",
		"system:certificates.k8s.io:certificatesigningrequests:nodeclient",
		"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
		"system:volume-scheduler", "system:certificates.k8s.io:legacy-unknown-approver",
		"system:certificates.k8s.io:kubelet-serving-approver", "system:certificates.k8s.io:kube-apiserver-client-approver",
		"system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
		"system:service-account-issuer-discovery", "system:node-proxier", "system:kube-scheduler",
	} {
		if _, err := srv.Client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("default ClusterRole %s: %v", name, err)
		}
	}
	for _, name := range []string{"system:volume-scheduler", "system:kube-dns"} {
		if _, err := srv.Client.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("default ClusterRoleBinding %s: %v", name, err)
		}
	}
}

type notAllowed struct{ reason string }

func (e *notAllowed) Error() string { return "not allowed: " + e.reason }

// A kubelet's nodes/status write that sets a label NodeRestriction forbids is refused
// with a 403 naming it, as on the Node itself; a plain label goes through, as upstream's
// (a status write may change labels there).
func TestNodeStatusWriteWithRestrictedLabelIsForbidden(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	node, err := kubernetes.NewForConfig(srv.NodeConfig(t, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}}
	if _, err := node.CoreV1().Nodes().Create(ctx, n1, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"node-restriction.kubernetes.io/pool", "node-role.kubernetes.io/control-plane"} {
		patch := `{"metadata":{"labels":{"` + label + `":"x"}},"status":{"phase":"Running"}}`
		_, err := node.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), label) {
			t.Fatalf("status patch setting %s: %v, want 403 naming it", label, err)
		}
		var cur *corev1.Node
		cur, err = node.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, set := cur.Labels[label]; set {
			t.Fatalf("label %s was stored", label)
		}
		// The same write through a full UpdateStatus.
		cur.Labels[label] = "x"
		if _, err := node.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("UpdateStatus setting %s: %v, want 403", label, err)
		}
	}
	out, err := node.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`), metav1.PatchOptions{}, "status")
	if err != nil || out.Labels["team"] != "a" {
		t.Fatalf("status patch setting a plain label: %v (labels %v)", err, out.Labels)
	}
}

// The data dir is created 0700, and an existing looser one is tightened at start.
func TestDataDirIsPrivate(t *testing.T) {
	dir := t.TempDir() + "/data"
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	srv := apiservertest.Start(t, apiservertest.WithDataDir(dir))
	srv.Stop()
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("existing data dir after start: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	fresh := t.TempDir() + "/fresh/data"
	apiservertest.Start(t, apiservertest.WithDataDir(fresh)).Stop()
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("new data dir: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
}
