package apiserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// The in-process scheduler and controller manager act as system:kube-scheduler and
// system:kube-controller-manager, limited to their bootstrap roles: each may do its job
// and is refused what its role does not grant. Their tokens are in no file.
func TestComponentCredentials(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clientOf := func(cfg *rest.Config) kubernetes.Interface {
		t.Helper()
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	schedCfg, cmCfg := srv.SchedulerConfig(t), srv.ControllerManagerConfig(t)
	sched, cm := clientOf(schedCfg), clientOf(cmCfg)
	if again := srv.SchedulerConfig(t); again.BearerToken != schedCfg.BearerToken {
		t.Errorf("a second SchedulerConfig has another token")
	}
	if schedCfg.BearerToken == cmCfg.BearerToken || schedCfg.BearerToken == srv.Config.BearerToken {
		t.Fatalf("the components share a token with each other or the admin")
	}
	if _, err := srv.API.ComponentRESTConfig("system:admin"); err == nil || !strings.Contains(err.Error(), `"system:admin"`) {
		t.Errorf("ComponentRESTConfig(system:admin): err = %v, want one naming the user", err)
	}

	for _, c := range []struct {
		client kubernetes.Interface
		user   string
	}{{sched, apiserver.SchedulerUser}, {cm, apiserver.ControllerManagerUser}} {
		r, err := c.client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("whoami as %s: %v", c.user, err)
		}
		if u := r.Status.UserInfo; u.Username != c.user || strings.Contains(strings.Join(u.Groups, ","), "system:masters") {
			t.Errorf("whoami: %s in %v, want %s without system:masters", u.Username, u.Groups, c.user)
		}
	}

	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: err = %v, want 403", what, err)
		}
	}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}

	// The controller manager: creates pods (workload controllers), ConfigMaps and
	// ServiceAccounts (each namespace's kube-root-ca.crt and default), updates Nodes
	// (taints); no RBAC writes beyond what it holds, no impersonation.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	_, err := cm.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	allowed("controller manager creates a pod", err)
	_, err = cm.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm1"}}, metav1.CreateOptions{})
	allowed("controller manager creates a configmap", err)
	_, err = cm.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	allowed("controller manager lists secrets (its informers)", err)
	_, err = cm.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "all"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}, metav1.CreateOptions{})
	forbidden("controller manager creates a cluster-admin-like ClusterRole", err)
	_, err = cm.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cm-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: apiserver.ControllerManagerUser}}}, metav1.CreateOptions{})
	forbidden("controller manager binds itself to cluster-admin", err)
	imp := rest.CopyConfig(cmCfg)
	imp.Impersonate = rest.ImpersonationConfig{UserName: "wasmkube-admin", Groups: []string{"system:masters"}}
	_, err = clientOf(imp).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	forbidden("controller manager impersonates the admin", err)

	// The scheduler: binds pods, patches its explanation annotation and pod status,
	// writes its Lease; it creates no pods, reads no secrets, changes no nodes.
	_, err = sched.CoreV1().Pods("default").Patch(ctx, "p1", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"scheduler.wasmkube.io/explain":"{}"}}}`), metav1.PatchOptions{})
	allowed("scheduler patches the explanation annotation", err)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	_, err = srv.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	allowed("admin creates a node", err)
	err = sched.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
	allowed("scheduler binds a pod", err)
	_, err = sched.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p2"},
		Spec: pod.Spec}, metav1.CreateOptions{})
	forbidden("scheduler creates a pod", err)
	_, err = sched.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	forbidden("scheduler lists secrets", err)
	_, err = sched.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	forbidden("scheduler cordons a node", err)
	_, err = sched.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm2"}}, metav1.CreateOptions{})
	forbidden("scheduler creates a configmap", err)

	// Neither token is written anywhere in the data dir.
	err = filepath.Walk(srv.DataDir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Size() > 64<<20 {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // a socket or a file etcd holds open
		}
		for _, tok := range []string{schedCfg.BearerToken, cmCfg.BearerToken} {
			if strings.Contains(string(b), tok) {
				t.Errorf("%s contains a component token", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
