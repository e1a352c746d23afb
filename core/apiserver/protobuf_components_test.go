package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/internal/kubeclient"
)

// TestProtobufClientsEveryCall: the calls our components make (scheduler, controller
// manager, kubelet, hollow nodes), through clientsets that send and accept protobuf,
// as their own credentials: creates, create-only kinds (reviews, TokenRequest, Binding,
// Eviction), subresources (status, scale, binding, eviction, token, finalize), patches
// (JSON bodies whatever the client's content type), deletes with protobuf
// DeleteOptions bodies, and the errors (a protobuf Status the client decodes into the
// right API error).
func TestProtobufClientsEveryCall(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := kubeclient.NewClientset(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := kubeclient.NewClientset(srv.SchedulerConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cm, err := kubeclient.NewClientset(srv.ControllerManagerConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	kl, err := kubeclient.NewClientset(srv.NodeConfig(t, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s over protobuf: %v", what, err)
		}
	}

	// Reviews: create-only kinds answered with the object.
	for _, c := range []struct {
		kubernetes.Interface
		user string
	}{{sched, apiserver.SchedulerUser}, {cm, apiserver.ControllerManagerUser}, {kl, "system:node:n1"}} {
		user := c.user
		r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		must("selfsubjectreviews create as "+user, err)
		if r.Status.UserInfo.Username != user {
			t.Errorf("whoami over protobuf: %q, want %q", r.Status.UserInfo.Username, user)
		}
	}
	ssar, err := sched.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "binding"}}}, metav1.CreateOptions{})
	must("selfsubjectaccessreviews create", err)
	if !ssar.Status.Allowed {
		t.Errorf("the scheduler may not bind pods: %+v", ssar.Status)
	}
	tr, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: srv.Config.BearerToken}}, metav1.CreateOptions{})
	must("tokenreviews create", err)
	if !tr.Status.Authenticated {
		t.Errorf("token review of the admin token: %+v", tr.Status)
	}

	// The kubelet: its Node, its status, its Lease.
	node, err := kl.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}}, metav1.CreateOptions{})
	must("nodes create", err)
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
	node.Status.Allocatable = node.Status.Capacity
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	node, err = kl.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	must("nodes/status update", err)
	if node.Status.Allocatable.Cpu().String() != "4" {
		t.Errorf("node status after update: %+v", node.Status.Allocatable)
	}
	_, err = kl.CoreV1().Nodes().Patch(ctx, "n1", types.StrategicMergePatchType, []byte(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`), metav1.PatchOptions{}, "status")
	must("nodes/status patch", err)
	lease, err := kl.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &metav1.MicroTime{Time: time.Now()}}}, metav1.CreateOptions{})
	must("leases create", err)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	_, err = kl.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{})
	must("leases update", err)

	// The controller manager: a ReplicaSet's pod, the Deployment's scale and status.
	dep, err := admin.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: testPod("x").Spec}}}, metav1.CreateOptions{})
	must("deployments create", err)
	sc, err := cm.AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	must("deployments/scale get", err)
	sc.Spec.Replicas = 3
	sc, err = cm.AppsV1().Deployments("default").UpdateScale(ctx, "web", sc, metav1.UpdateOptions{})
	must("deployments/scale update", err)
	if sc.Spec.Replicas != 3 {
		t.Errorf("scale after update: %d", sc.Spec.Replicas)
	}
	dep, err = cm.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	must("deployments get", err)
	dep.Status.ObservedGeneration, dep.Status.Replicas = dep.Generation, 3
	_, err = cm.AppsV1().Deployments("default").UpdateStatus(ctx, dep, metav1.UpdateOptions{})
	must("deployments/status update", err)
	_, err = cm.AutoscalingV2().HorizontalPodAutoscalers("default").List(ctx, metav1.ListOptions{})
	must("horizontalpodautoscalers list", err)

	pod, err := cm.CoreV1().Pods("default").Create(ctx, testPod("p1"), metav1.CreateOptions{})
	must("pods create", err)
	pods, err := cm.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	must("pods list", err)
	if len(pods.Items) != 1 || pods.Items[0].Name != "p1" || pods.Items[0].Spec.Containers[0].Image != "busybox" {
		t.Errorf("pods list over protobuf: %+v", pods.Items)
	}

	// The scheduler: bind with the explanation annotation, an Event (client-go's recorder writes core
	// Events), its Lease.
	err = sched.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1", UID: pod.UID,
		Annotations: map[string]string{"scheduler.wasmkube.io/explain": "{}"}}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
	must("pods/binding create", err)
	err = sched.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "already assigned") {
		t.Errorf("a second bind over protobuf: err = %v, want 409 naming the assignment", err)
	}
	ev, err := cm.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "p1.2"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p1"},
		Reason: "Created", Message: "x", Type: "Normal", Count: 1, Source: corev1.EventSource{Component: "replicaset-controller"}}, metav1.CreateOptions{})
	must("core events create", err)
	_, err = cm.CoreV1().Events("default").Patch(ctx, ev.Name, types.StrategicMergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{})
	must("core events patch", err)
	if _, err := sched.CoordinationV1().Leases("kube-system").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "wasmkube-scheduler"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("s1")}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Errorf("scheduler lease create over protobuf: %v", err)
	}

	// The kubelet: the pod's status, a service account token.
	pod, err = kl.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
	must("pods get as the node", err)
	if pod.Spec.NodeName != "n1" || pod.Annotations["scheduler.wasmkube.io/explain"] != "{}" {
		t.Errorf("bound pod: node %q, annotations %v", pod.Spec.NodeName, pod.Annotations)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	_, err = kl.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	must("pods/status update", err)
	tok, err := kl.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p1", UID: pod.UID}}}, metav1.CreateOptions{})
	must("serviceaccounts/token create", err)
	if tok.Status.Token == "" {
		t.Error("TokenRequest over protobuf: no token")
	}

	// Eviction, deletes with DeleteOptions bodies, a namespace's finalize.
	_, err = admin.CoreV1().Pods("default").Create(ctx, testPod("p2"), metav1.CreateOptions{})
	must("pods create", err)
	err = admin.CoreV1().Pods("default").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p2"}, DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}})
	must("pods/eviction create", err)
	err = cm.CoreV1().Pods("default").Delete(ctx, "p1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	must("pods delete with preconditions", err)
	err = cm.CoreV1().Pods("default").Delete(ctx, "p1", metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("delete of a deleted pod over protobuf: err = %v, want 404", err)
	}
	err = cm.CoreV1().ConfigMaps("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "none=here"})
	must("configmaps deletecollection", err)
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{})
	must("namespaces create", err)
	err = admin.CoreV1().Namespaces().Delete(ctx, "gone", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	must("namespaces delete", err)
	ns, err := cm.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{})
	must("namespaces get", err)
	ns.Spec.Finalizers = nil
	_, err = cm.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	must("namespaces/finalize update", err)

	// Refusals arrive as the API errors they are.
	_, err = sched.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("scheduler lists secrets over protobuf: err = %v, want 403", err)
	}
	_, err = cm.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.containers") {
		t.Errorf("invalid pod over protobuf: err = %v, want 422 naming spec.containers", err)
	}
}
