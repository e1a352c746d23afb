package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

func explorerGet(ctx context.Context, c kubernetes.Interface, path string, out any) error {
	path, query, _ := strings.Cut(path, "?")
	req := c.CoreV1().RESTClient().Get().AbsPath(explorerv1.PathPrefix + "/" + path)
	if query != "" {
		k, v, _ := strings.Cut(query, "=")
		req = req.Param(k, v)
	}
	res := req.Do(ctx)
	if err := res.Error(); err != nil {
		return err // a Status decoded (Raw's error would not be)
	}
	raw, _ := res.Raw()
	return json.Unmarshal(raw, out)
}

func attempt(ns, name, node string) explorerv1.Record {
	return explorerv1.Record{Type: explorerv1.TypeSchedulingAttempt, Component: explorerv1.ComponentScheduler, Source: "default-scheduler",
		SchedulingAttempt: &explorerv1.SchedulingAttempt{Pod: explorerv1.ObjectRef{Namespace: ns, Name: name}, Attempt: 1,
			Profile: "default-scheduler", Result: explorerv1.ResultScheduled, Node: node, Nodes: 1, Evaluated: 1, Feasible: 1,
			Matrix: []explorerv1.MatrixRow{{Node: node, Chosen: true}}}}
}

func push(ctx context.Context, c kubernetes.Interface, recs ...explorerv1.Record) error {
	body, _ := json.Marshal(&explorerv1.RecordList{Items: recs})
	return c.CoreV1().RESTClient().Post().AbsPath(explorerv1.PathPrefix, "records").
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
}

// TestExplorerDecisionsNeedTheRightToReadThePod: through real client-go, a user who may
// read the pods of one namespace reads their decisions (the scheduler's pushed attempts
// and the admission chain's records) and nothing of another namespace: 403 for a pod
// there, and the timeline leaves its records out. Only the scheduler's credential may
// push; the group is in discovery; a watch sends the records added after the list.
func TestExplorerDecisionsNeedTheRightToReadThePod(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	admin := srv.Client
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "team-a"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	if _, err := admin.RbacV1().Roles("team-a").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-reads-pods", Namespace: "team-a"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}}
	if _, err := admin.RbacV1().RoleBindings("team-a").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sched, err := kubernetes.NewForConfig(srv.SchedulerConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := push(ctx, sched, attempt("team-a", "web", "node-1"), attempt("team-b", "web", "node-2")); err != nil {
		t.Fatalf("the scheduler pushes its records: %v", err)
	}
	alice := as(t, srv, "alice")
	if err := push(ctx, alice, attempt("team-a", "web", "node-3")); !apierrors.IsForbidden(err) {
		t.Fatalf("alice pushes a record: %v, want 403", err)
	}

	var pd explorerv1.PodDecisions
	eventually(t, "alice reads the decisions of team-a/web", func() error {
		return explorerGet(ctx, alice, "namespaces/team-a/pods/web", &pd)
	})
	var types []string
	for _, r := range pd.Records {
		types = append(types, string(r.Type))
		if r.SchedulingAttempt != nil && r.SchedulingAttempt.Node != "node-1" {
			t.Errorf("team-a/web's attempt says node %q, want node-1 (the record pushed for it)", r.SchedulingAttempt.Node)
		}
	}
	if got := strings.Join(types, ","); got != "AdmissionRequest,SchedulingAttempt" {
		t.Errorf("team-a/web's records are %s, want its create's AdmissionRequest then the SchedulingAttempt", got)
	}
	if pd.ExplorerPath != "/explorer/pods/team-a/web" || pd.Kind != "PodDecisions" || pd.APIVersion != explorerv1.APIVersion {
		t.Errorf("PodDecisions %s %s, page %q", pd.APIVersion, pd.Kind, pd.ExplorerPath)
	}
	if ar := pd.Records[0].AdmissionRequest; ar == nil || !ar.Allowed || ar.Operation != "CREATE" || ar.Object.Name != "web" || ar.User == "" {
		t.Errorf("the create's admission record: %+v", ar)
	}

	err = explorerGet(ctx, alice, "namespaces/team-b/pods/web", &pd)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"pods"`) {
		t.Fatalf("alice reads team-b/web's decisions: %v, want 403 naming pods", err)
	}
	var list explorerv1.RecordList
	if err := explorerGet(ctx, alice, "records", &list); err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Items {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), "team-b") || r.Type == explorerv1.TypeSwap {
			t.Errorf("alice's timeline has a record she may not read: %s", b)
		}
	}
	if len(list.Items) < 2 {
		t.Errorf("alice's timeline has %d records, want at least team-a/web's two", len(list.Items))
	}
	var adminList explorerv1.RecordList
	if err := explorerGet(ctx, admin, "records?type=SchedulingAttempt", &adminList); err != nil || len(adminList.Items) != 2 {
		t.Fatalf("the admin's SchedulingAttempt timeline: %d records, %v; want both pods'", len(adminList.Items), err)
	}

	res, err := admin.Discovery().ServerResourcesForGroupVersion(explorerv1.APIVersion)
	if err != nil {
		t.Fatalf("discovery of %s: %v", explorerv1.APIVersion, err)
	}
	var names []string
	for _, r := range res.APIResources {
		names = append(names, r.Name)
	}
	if fmt.Sprint(names) != "[pods records policies nodes]" {
		t.Errorf("discovery lists %v", names)
	}

	// A watch from the list's resourceVersion gets the next record about the pod.
	stream, err := alice.CoreV1().RESTClient().Get().AbsPath(explorerv1.PathPrefix, "namespaces/team-a/pods/web").
		Param("watch", "true").Param("resourceVersion", pd.ResourceVersion).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if err := push(ctx, sched, attempt("team-b", "web", "node-9"), attempt("team-a", "web", "node-4")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stream).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ev explorerv1.WatchEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		t.Fatalf("watch line %q: %v", line, err)
	}
	if ev.Type != "ADDED" || ev.Object.SchedulingAttempt == nil || ev.Object.SchedulingAttempt.Node != "node-4" {
		t.Fatalf("watch event %s: want team-a/web's attempt on node-4 (team-b's is not hers)", line)
	}
}

// A pod on a node that serves no kubelet API (a hollow node) has no hook runs to show, and
// the page is not told that the node's records could not be read.
func TestExplorerPodOnNodeWithoutKubelet(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	admin := srv.Client
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hollow-x", Labels: map[string]string{"wasmkube.io/hollow": "true"}}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "hollow-x", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pd explorerv1.PodDecisions
	eventually(t, "the admin reads default/web's decisions", func() error {
		return explorerGet(ctx, admin, "namespaces/default/pods/web", &pd)
	})
	if pd.Node != "hollow-x" || pd.KubeletError != "" {
		t.Errorf("decisions of a pod on a node without a kubelet API: node %q, kubeletError %q", pd.Node, pd.KubeletError)
	}
}
