package apiserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

var ctx = context.Background()

func mustClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func boundPod(name, node string) *corev1.Pod {
	p := testPod(name)
	p.Spec.NodeName = node
	return p
}

func TestNodeCredentialIsRestricted(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := srv.Client
	n1 := mustClient(t, srv.NodeConfig(t, "n1"))
	for _, n := range []string{"n1", "n2"} {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mine, err := admin.CoreV1().Pods("default").Create(ctx, boundPod("mine", "n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, boundPod("theirs", "n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Reads are allowed.
	if _, err := n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}); err != nil {
		t.Fatalf("node list pods: %v", err)
	}
	// Its own node and node status: allowed.
	node, err := n1.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Labels = map[string]string{"zone": "a"}
	if _, err := n1.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update own node: %v", err)
	}
	node, _ = n1.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := n1.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update own node status: %v", err)
	}
	// Another node: 403.
	other, _ := admin.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	other.Labels = map[string]string{"evil": "1"}
	if _, err := n1.CoreV1().Nodes().Update(ctx, other, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("update other node: want 403, got %v", err)
	}
	if _, err := n1.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create other node: want 403, got %v", err)
	}
	// Its lease: allowed; another lease: 403.
	holder := "n1"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: corev1.NamespaceNodeLease}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	if _, err := n1.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create own lease: %v", err)
	}
	lease2 := lease.DeepCopy()
	lease2.Name, lease2.ResourceVersion = "n2", ""
	if _, err := n1.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease2, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create other lease: want 403, got %v", err)
	}
	// Pod status of its pod: allowed; of another node's pod: 403.
	mine.Status.Phase = corev1.PodRunning
	if _, err := n1.CoreV1().Pods("default").UpdateStatus(ctx, mine, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status of own pod: %v", err)
	}
	if _, err := n1.CoreV1().Pods("default").Patch(ctx, "theirs", types.MergePatchType, []byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Fatalf("patch status of other pod: want 403, got %v", err)
	}
	// Pod spec, pod creation: 403.
	if _, err := n1.CoreV1().Pods("default").Patch(ctx, "mine", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("patch own pod spec: want 403, got %v", err)
	}
	if _, err := n1.CoreV1().Pods("default").Create(ctx, testPod("new"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create pod: want 403, got %v", err)
	}
	// Events: allowed.
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "mine", Namespace: "default"}, Reason: "Started", Message: "started", Type: "Normal", Source: corev1.EventSource{Component: "kubelet"}}
	if _, err := n1.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create event: %v", err)
	}
	// Delete: another node's pod 403; its own pod (grace 0) removes it.
	if err := n1.CoreV1().Pods("default").Delete(ctx, "theirs", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("delete other pod: want 403, got %v", err)
	}
	zero := int64(0)
	if err := n1.CoreV1().Pods("default").Delete(ctx, "mine", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete own pod: %v", err)
	}
	if _, err := admin.CoreV1().Pods("default").Get(ctx, "mine", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("own pod after grace-0 delete: %v", err)
	}
}

func TestPodGracefulDeletionAndFinalizers(t *testing.T) {
	srv := apiservertest.Start(t)
	pods := srv.Client.CoreV1().Pods("default")
	kubelet := mustClient(t, srv.NodeConfig(t, "n1")).CoreV1().Pods("default")

	// Bound: marked with deletionTimestamp and the pod's grace period, kept until the
	// kubelet confirms with grace 0.
	p := boundPod("bound", "n1")
	g := int64(45)
	p.Spec.TerminationGracePeriodSeconds = &g
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("bound pod vanished before its kubelet confirmed: %v", err)
	}
	if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 45 {
		t.Fatalf("deletion marks: %v %v", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
	}
	// A shorter grace period shortens it.
	ten := int64(10)
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: &ten}); err != nil {
		t.Fatal(err)
	}
	got, _ = pods.Get(ctx, "bound", metav1.GetOptions{})
	if *got.DeletionGracePeriodSeconds != 10 {
		t.Fatalf("grace after shorter delete: %d", *got.DeletionGracePeriodSeconds)
	}
	zero := int64(0)
	if err := kubelet.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after kubelet's grace-0 delete: %v", err)
	}

	// Unbound: gone at once.
	if _, err := pods.Create(ctx, testPod("unbound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "unbound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "unbound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unbound pod after delete: %v", err)
	}

	// Finalizers hold deletion until removed.
	fp := testPod("held")
	fp.Finalizers = []string{"example.com/hold"}
	if _, err := pods.Create(ctx, fp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := pods.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("finalized pod: %v %v", err, held)
	}
	held.Finalizers = nil
	if _, err := pods.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod after last finalizer removed: %v", err)
	}

	// propagationPolicy is stored as the upstream finalizers.
	for policy, fin := range map[metav1.DeletionPropagation]string{metav1.DeletePropagationOrphan: "orphan", metav1.DeletePropagationForeground: "foregroundDeletion"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(string(policy))}}
		if _, err := srv.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pol := policy
		if err := srv.Client.CoreV1().ConfigMaps("default").Delete(ctx, cm.Name, metav1.DeleteOptions{PropagationPolicy: &pol}); err != nil {
			t.Fatal(err)
		}
		got, err := srv.Client.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || got.Finalizers[0] != fin {
			t.Fatalf("%s delete: %v %+v", policy, err, got.ObjectMeta)
		}
	}
}

func TestNamespaceTermination(t *testing.T) {
	srv := apiservertest.Start(t)
	nss := srv.Client.CoreV1().Namespaces()
	ns, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Fatalf("new namespace: %+v %+v", ns.Status, ns.Spec)
	}
	if err := nss.Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err = nss.Get(ctx, "team", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("terminating namespace: %v %+v", err, ns)
	}
	if _, err := srv.Client.CoreV1().Pods("team").Create(ctx, testPod("late"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create in terminating namespace: want 403, got %v", err)
	}
	if _, err := srv.Client.CoreV1().Pods("missing").Create(ctx, testPod("p"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("create in missing namespace: want 404, got %v", err)
	}
	ns.Spec.Finalizers = nil
	if _, err := nss.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("finalize: %v", err)
	}
	if _, err := nss.Get(ctx, "team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace after finalize: %v", err)
	}
	if err := nss.Delete(ctx, "kube-system", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("delete kube-system: want 403, got %v", err)
	}
}

func TestConcurrentUpdatesResolveThroughConflicts(t *testing.T) {
	srv := apiservertest.Start(t)
	cms := srv.Client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counter"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts := 0
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := retry.RetryOnConflict(wait.Backoff{Steps: 200, Duration: time.Millisecond, Factor: 1.1, Jitter: 1, Cap: 50 * time.Millisecond}, func() error {
					cm, err := cms.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					n, _ := strconv.Atoi(cm.Data["n"])
					cm.Data["n"] = strconv.Itoa(n + 1)
					_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
					if apierrors.IsConflict(err) {
						mu.Lock()
						conflicts++
						mu.Unlock()
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cm, err := cms.Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["n"] != strconv.Itoa(writers*each) {
		t.Fatalf("counter = %s, want %d (lost updates; %d conflicts seen)", cm.Data["n"], writers*each, conflicts)
	}
	t.Logf("%d conflicts resolved by retry", conflicts)
}

func TestRestartKeepsObjectsAndCredentials(t *testing.T) {
	dir := t.TempDir()
	first := apiservertest.Start(t, apiservertest.WithDataDir(dir))
	created, err := first.Client.CoreV1().Pods("default").Create(ctx, testPod("survivor"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeCfg := first.NodeConfig(t, "n1")
	join := readFile(t, filepath.Join(dir, "join-token"))
	ca := first.API.CACertPEM()
	first.Stop()

	second := apiservertest.Start(t, apiservertest.WithDataDir(dir))
	got, err := second.Client.CoreV1().Pods("default").Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod after restart: %v", err)
	}
	if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("pod changed across restart: %s/%s vs %s/%s", got.UID, got.ResourceVersion, created.UID, created.ResourceVersion)
	}
	if !bytes.Equal(ca, second.API.CACertPEM()) || readFile(t, filepath.Join(dir, "join-token")) != join {
		t.Fatal("CA or join token changed across restart")
	}
	ep, err := second.Client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || fmt.Sprint(ep.Subsets[0].Ports[0].Port) != second.URL[strings.LastIndex(second.URL, ":")+1:] {
		t.Fatalf("endpoints default/kubernetes after restart: %v %+v (server %s)", err, ep, second.URL)
	}
	nodeCfg.Host = second.URL
	if _, err := mustClient(t, nodeCfg).CoreV1().Services("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("node token after restart: %v", err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rawRequest sends an HTTP request with the admin token.
func rawRequest(t *testing.T, srv *apiservertest.Server, method, path, contentType string, body []byte) (int, metav1.Status) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Config.BearerToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	tr, err := rest.TransportFor(&rest.Config{TLSClientConfig: srv.Config.TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var st metav1.Status
	_ = json.Unmarshal(data, &st)
	return resp.StatusCode, st
}

func TestBadRequests(t *testing.T) {
	srv := apiservertest.Start(t)
	pods := "/api/v1/namespaces/default/pods"
	valid := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	cases := []struct {
		name, method, path, ct, body string
		code                         int
		msg                          string
	}{
		{"malformed JSON", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod",`, 400, "cannot be handled as a Pod"},
		{"malformed YAML", "POST", pods, "application/yaml", "kind: Pod\n  - x: [", 400, "malformed YAML"},
		{"kind mismatch", "POST", pods, "application/json", strings.Replace(valid, `"Pod"`, `"Service"`, 1), 400, "does not match the expected kind Pod"},
		{"apiVersion mismatch", "POST", pods, "application/json", strings.Replace(valid, `"v1"`, `"apps/v1"`, 1), 400, "does not match the expected apiVersion v1"},
		{"namespace mismatch", "POST", pods, "application/json", strings.Replace(valid, `"name":"p"`, `"name":"p","namespace":"other"`, 1), 400, "does not match the namespace"},
		{"unknown field strict", "POST", pods + "?fieldValidation=Strict", "application/json", strings.Replace(valid, `"image"`, `"imagez"`, 1), 400, `unknown field "spec.containers[0].imagez"`},
		{"duplicate field strict", "POST", pods + "?fieldValidation=Strict", "application/json", strings.Replace(valid, `"name":"p"`, `"name":"p","name":"q"`, 1), 400, `duplicate field "metadata.name"`},
		{"invalid", "POST", pods, "application/json", strings.Replace(valid, `"busybox"`, `""`, 1), 422, "spec.containers[0].image: Required value"},
		{"too large", "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"data":{"a":"` + strings.Repeat("x", 3<<20) + `"}}`, 413, "Request entity too large"},
		{"unsupported media type", "POST", pods, "text/plain", valid, 415, "unknown format"},
		{"unknown resource", "GET", "/api/v1/namespaces/default/widgets", "", "", 404, "could not find the requested resource"},
		{"method not allowed", "PUT", pods, "application/json", valid, 405, "not supported"},
		{"bad selector", "GET", pods + "?labelSelector=a%3D%3D%3Db", "", "", 400, "unable to parse"},
		{"bad resourceVersion", "GET", pods + "?resourceVersion=abc", "", "", 400, "invalid resourceVersion"},
		{"bad continue token", "GET", pods + "?limit=1&continue=garbage", "", "", 400, "continue token"},
		{"bad timeout", "GET", pods + "?timeout=soon", "", "", 400, "invalid timeout"},
		{"dry run writes nothing", "POST", pods + "?dryRun=All", "application/json", valid, 201, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, st := rawRequest(t, srv, c.method, c.path, c.ct, []byte(c.body))
			if code != c.code || !strings.Contains(st.Message, c.msg) {
				t.Fatalf("got %d %q, want %d containing %q", code, st.Message, c.code, c.msg)
			}
		})
	}
	list, err := srv.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("failed or dry-run requests stored pods: %v %d", err, len(list.Items))
	}
}

func TestGenerateNameScaleBindingTokenReview(t *testing.T) {
	srv := apiservertest.Start(t)
	pods := srv.Client.CoreV1().Pods("default")
	p := testPod("")
	p.GenerateName = "gen-"
	got, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil || !strings.HasPrefix(got.Name, "gen-") || len(got.Name) != len("gen-")+5 {
		t.Fatalf("generateName: %v %q", err, got.Name)
	}
	// binding sets spec.nodeName once.
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: got.Name, Annotations: map[string]string{"example.com/why": "fits"}},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := pods.Bind(ctx, b, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("second bind: want 409, got %v", err)
	}
	bound, _ := pods.Get(ctx, got.Name, metav1.GetOptions{})
	if bound.Spec.NodeName != "n1" || len(bound.Status.Conditions) != 1 || bound.Status.Conditions[0].Type != corev1.PodScheduled {
		t.Fatalf("after bind: %q %+v", bound.Spec.NodeName, bound.Status.Conditions)
	}
	if bound.Annotations["example.com/why"] != "fits" {
		t.Fatalf("binding annotations not copied onto the pod: %v", bound.Annotations)
	}
	// scale subresource.
	dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`
	if code, st := rawRequest(t, srv, "POST", "/apis/apps/v1/namespaces/default/deployments", "application/json", []byte(dep)); code != 201 {
		t.Fatalf("create deployment: %d %s", code, st.Message)
	}
	sc, err := srv.Client.AppsV1().Deployments("default").GetScale(ctx, "d", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 1 || sc.Status.Selector != "app=d" {
		t.Fatalf("get scale: %v %+v", err, sc)
	}
	sc.Spec.Replicas = 4
	if _, err := srv.Client.AppsV1().Deployments("default").UpdateScale(ctx, "d", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update scale: %v", err)
	}
	d, _ := srv.Client.AppsV1().Deployments("default").Get(ctx, "d", metav1.GetOptions{})
	if *d.Spec.Replicas != 4 || d.Generation != 2 {
		t.Fatalf("deployment after scale: replicas %d generation %d", *d.Spec.Replicas, d.Generation)
	}
	// tokenreview: node tokens review as system:node:<name>.
	nodeTok := srv.NodeConfig(t, "n7").BearerToken
	tr, err := srv.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: nodeTok}}, metav1.CreateOptions{})
	if err != nil || !tr.Status.Authenticated || tr.Status.User.Username != "system:node:n7" {
		t.Fatalf("token review: %v %+v", err, tr.Status)
	}
	tr, err = srv.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "nope"}}, metav1.CreateOptions{})
	if err != nil || tr.Status.Authenticated {
		t.Fatalf("bad token review: %v %+v", err, tr.Status)
	}
}

func TestJoinIssuesNodeCredential(t *testing.T) {
	srv := apiservertest.Start(t)
	join := strings.TrimSpace(readFile(t, filepath.Join(srv.DataDir, "join-token")))
	hash, secret, ok := strings.Cut(strings.TrimPrefix(join, "K10"), "::")
	if !ok || !strings.HasPrefix(join, "K10") {
		t.Fatalf("join token format: %q", join)
	}
	post := func(secret, body string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", srv.URL+"/wasmkube/v1/join", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		// A joining node does not have the CA yet; it checks the CA hash afterwards.
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, _ := post("wrong", `{"nodeName":"n1"}`); resp.StatusCode != 401 {
		t.Fatalf("wrong secret: %d", resp.StatusCode)
	}
	if resp, _ := post(secret, `{"nodeName":"Bad Name"}`); resp.StatusCode != 400 {
		t.Fatalf("bad node name: %d", resp.StatusCode)
	}
	resp, body := post(secret, `{"nodeName":"n1"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	var jr apiserver.JoinResponse
	if err := json.Unmarshal(body, &jr); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(jr.CACert))
	if hex.EncodeToString(sum[:]) != hash {
		t.Fatalf("CA hash mismatch")
	}
	cfg := &rest.Config{Host: srv.URL, BearerToken: jr.Token, TLSClientConfig: rest.TLSClientConfig{CAData: []byte(jr.CACert)}}
	c := mustClient(t, cfg)
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("joined node registers itself: %v", err)
	}
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("joined node registering another: %v", err)
	}
}

func TestServiceClusterIPAllocation(t *testing.T) {
	srv := apiservertest.Start(t)
	svcs := srv.Client.CoreV1().Services("default")
	mk := func(name string, typ corev1.ServiceType, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Type: typ, ClusterIP: ip,
			Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	}
	k, err := svcs.Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || k.Spec.ClusterIP != "10.96.0.1" || k.Spec.Ports[0].Port != 443 {
		t.Fatalf("service default/kubernetes: %v %+v", err, k)
	}
	seen := map[string]bool{"10.96.0.1": true}
	for i := 0; i < 5; i++ {
		s, err := svcs.Create(ctx, mk("s"+strconv.Itoa(i), corev1.ServiceTypeClusterIP, ""), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s.Spec.ClusterIP, "10.96.") || seen[s.Spec.ClusterIP] || len(s.Spec.ClusterIPs) != 1 {
			t.Fatalf("allocated %q %v (seen %v)", s.Spec.ClusterIP, s.Spec.ClusterIPs, seen)
		}
		seen[s.Spec.ClusterIP] = true
	}
	taken := ""
	for ip := range seen {
		taken = ip
	}
	if _, err := svcs.Create(ctx, mk("dup", corev1.ServiceTypeClusterIP, taken), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("taken IP: want 422, got %v", err)
	}
	np, err := svcs.Create(ctx, mk("np", corev1.ServiceTypeNodePort, ""), metav1.CreateOptions{})
	if err != nil || np.Spec.Ports[0].NodePort < 30000 || np.Spec.Ports[0].NodePort > 32767 {
		t.Fatalf("node port: %v %+v", err, np.Spec.Ports)
	}
	// A replace without the allocated values keeps them.
	repl := mk("np", corev1.ServiceTypeNodePort, "")
	repl.ResourceVersion = np.ResourceVersion
	got, err := svcs.Update(ctx, repl, metav1.UpdateOptions{})
	if err != nil || got.Spec.ClusterIP != np.Spec.ClusterIP || got.Spec.Ports[0].NodePort != np.Spec.Ports[0].NodePort {
		t.Fatalf("replace lost allocations: %v %+v", err, got.Spec)
	}
}

func TestDeletePreconditions(t *testing.T) {
	srv := apiservertest.Start(t)
	cms := srv.Client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := cm.ResourceVersion
	cm.Data = map[string]string{"a": "b"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}}); !apierrors.IsConflict(err) {
		t.Fatalf("stale resourceVersion precondition: want 409, got %v", err)
	}
	wrongUID := types.UID("not-the-uid")
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}}); !apierrors.IsConflict(err) {
		t.Fatalf("wrong uid precondition: want 409, got %v", err)
	}
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil {
		t.Fatalf("matching uid precondition: %v", err)
	}
}

// denyLabel is an admission plugin of the kind wasm policies plug in as: it refuses pods
// labelled forbidden=true and labels every other new pod.
type denyLabel struct{}

func (denyLabel) Admit(_ context.Context, a *admission.Attributes) error {
	if p, ok := a.Object.(*corev1.Pod); ok && a.Operation == admission.Create {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["admitted"] = "yes"
	}
	return nil
}

func (denyLabel) Validate(_ context.Context, a *admission.Attributes) error {
	if p, ok := a.Object.(*corev1.Pod); ok && p.Labels["forbidden"] == "true" {
		return fmt.Errorf("pods labelled forbidden=true are refused by policy")
	}
	return nil
}

func TestAdmissionPluginsFromOptions(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithAdmission(denyLabel{}))
	pods := srv.Client.CoreV1().Pods("default")
	got, err := pods.Create(ctx, testPod("ok"), metav1.CreateOptions{})
	if err != nil || got.Labels["admitted"] != "yes" {
		t.Fatalf("mutating plugin: %v %v", err, got.Labels)
	}
	bad := testPod("bad")
	bad.Labels["forbidden"] = "true"
	_, err = pods.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "refused by policy") {
		t.Fatalf("validating plugin: %v", err)
	}
	// The same plugin sees updates.
	got.Labels["forbidden"] = "true"
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("validating plugin on update: %v", err)
	}
}

// A kubelet's pod watch (fieldSelector spec.nodeName=<node>) is filed under its node in the
// storage watch index: it still sees a pod bound to its node as ADDED and its deletion, and
// nothing of pods elsewhere.
func TestNodePodWatchThroughIndex(t *testing.T) {
	srv := apiservertest.Start(t)
	pods := srv.Client.CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, boundPod("elsewhere", "n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "p", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < 2 {
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				t.Fatalf("event %s with %T", ev.Type, ev.Object)
			}
			got = append(got, string(ev.Type)+" "+p.Name)
		case <-timeout:
			t.Fatalf("events %v, want [ADDED p, ... DELETED p]", got)
		}
	}
	if got[0] != "ADDED p" || got[len(got)-1] != "DELETED p" {
		t.Fatalf("events %v, want [ADDED p, DELETED p]", got)
	}
}
