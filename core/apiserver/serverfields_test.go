package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1apply "k8s.io/client-go/applyconfigurations/apps/v1"
	autoscalingv1apply "k8s.io/client-go/applyconfigurations/autoscaling/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// subEntryOf returns the managedFields entry of manager on the main resource, or nil.
func subEntryOf(mf []metav1.ManagedFieldsEntry, manager, subresource string) *metav1.ManagedFieldsEntry {
	for i := range mf {
		if mf[i].Manager == manager && mf[i].Subresource == subresource {
			return &mf[i]
		}
	}
	return nil
}

// TestServerWrittenObjectsHaveManagedFields: the objects the server writes at start carry
// an Update entry as upstream's do (kube-apiserver for its own, kube-controller-manager for
// what upstream's controllers write), and a user's server-side apply beside them owns its
// fields without conflicts.
func TestServerWrittenObjectsHaveManagedFields(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := srv.Client
	get := map[string]func() (metav1.Object, error){
		"namespace default": func() (metav1.Object, error) {
			return c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		},
		"service default/kubernetes": func() (metav1.Object, error) {
			return c.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		},
		"endpoints default/kubernetes": func() (metav1.Object, error) {
			return c.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		},
		"clusterrole cluster-admin": func() (metav1.Object, error) {
			return c.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{})
		},
		"clusterrolebinding system:kube-scheduler": func() (metav1.Object, error) {
			return c.RbacV1().ClusterRoleBindings().Get(ctx, "system:kube-scheduler", metav1.GetOptions{})
		},
		"priorityclass system-node-critical": func() (metav1.Object, error) {
			return c.SchedulingV1().PriorityClasses().Get(ctx, "system-node-critical", metav1.GetOptions{})
		},
	}
	for what, g := range get {
		o, err := g()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		e := subEntryOf(o.GetManagedFields(), "kube-apiserver", "")
		if e == nil || e.Operation != metav1.ManagedFieldsOperationUpdate || e.FieldsType != "FieldsV1" || e.FieldsV1 == nil || e.Time == nil {
			t.Errorf("%s: managedFields %+v, want an Update by kube-apiserver", what, o.GetManagedFields())
		}
	}
	// The default ServiceAccount sets no field (its entry would be empty, so there is none,
	// as upstream's); the root CA ConfigMap beside it is upstream's controller manager's.
	cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	if err != nil || subEntryOf(cm.ManagedFields, "kube-controller-manager", "") == nil {
		t.Errorf("configmap kube-system/kube-root-ca.crt: %v %+v, want an entry of kube-controller-manager", err, cm)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	if err != nil || !strings.Contains(string(subEntryOf(ns.ManagedFields, "kube-apiserver", "").FieldsV1.Raw), `"f:kubernetes.io/metadata.name"`) {
		t.Errorf("namespace default: the server's entry should own its metadata.name label: %v %+v", err, ns.ManagedFields)
	}

	applied, err := c.CoreV1().Namespaces().Apply(ctx, corev1apply.Namespace("default").WithLabels(map[string]string{"team": "a"}),
		metav1.ApplyOptions{FieldManager: "ops"})
	if err != nil {
		t.Fatalf("apply a label to namespace default: %v", err)
	}
	if subEntryOf(applied.ManagedFields, "ops", "") == nil || subEntryOf(applied.ManagedFields, "kube-apiserver", "") == nil || applied.Labels["team"] != "a" {
		t.Fatalf("namespace default after the apply: %+v", applied.ObjectMeta)
	}
}

// TestScaleApply: a server-side apply of a Deployment's scale subresource, as upstream's
// (client-go's ApplyScale): a conflict with the Deployment's applier on spec.replicas is a
// 409 naming it, force takes the field under a scale entry, and the applier's next apply
// of another value conflicts with that entry.
func TestScaleApply(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deploys := srv.Client.AppsV1().Deployments("default")
	labels := map[string]string{"app": "web"}
	deploy := appsv1apply.Deployment("web", "default").WithSpec(appsv1apply.DeploymentSpec().WithReplicas(2).
		WithSelector(metav1apply.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1apply.PodTemplateSpec().WithLabels(labels).WithSpec(corev1apply.PodSpec().
			WithContainers(corev1apply.Container().WithName("web").WithImage("busybox")))))
	if _, err := deploys.Apply(ctx, deploy, metav1.ApplyOptions{FieldManager: "deployer"}); err != nil {
		t.Fatal(err)
	}

	scale := autoscalingv1apply.Scale().WithSpec(autoscalingv1apply.ScaleSpec().WithReplicas(3))
	_, err := deploys.ApplyScale(ctx, "web", scale, metav1.ApplyOptions{FieldManager: "autoscaler"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "deployer"`) || !strings.Contains(err.Error(), ".spec.replicas") {
		t.Fatalf("scale apply over the deployer's replicas: %v, want a 409 naming deployer and .spec.replicas", err)
	}
	sc, err := deploys.ApplyScale(ctx, "web", scale, metav1.ApplyOptions{FieldManager: "autoscaler", Force: true})
	if err != nil || sc.Spec.Replicas != 3 {
		t.Fatalf("forced scale apply: %v %+v", err, sc)
	}
	d, err := deploys.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 3 {
		t.Fatalf("deployment after the scale apply: %v %+v", err, d)
	}
	e := subEntryOf(d.ManagedFields, "autoscaler", "scale")
	if e == nil || e.Operation != metav1.ManagedFieldsOperationApply || !strings.Contains(string(e.FieldsV1.Raw), `"f:replicas"`) {
		t.Fatalf("deployment managedFields %+v, want an Apply by autoscaler on scale owning replicas", d.ManagedFields)
	}
	_, err = deploys.Apply(ctx, deploy, metav1.ApplyOptions{FieldManager: "deployer"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "autoscaler"`) {
		t.Fatalf("the deployer's apply of replicas 2 after the scale apply: %v, want a 409 naming autoscaler", err)
	}
	// A dropped replicas field in the deployer's configuration releases it without conflict.
	deploy.Spec.Replicas = nil
	if _, err := deploys.Apply(ctx, deploy, metav1.ApplyOptions{FieldManager: "deployer"}); err != nil {
		t.Fatalf("the deployer's apply without replicas: %v", err)
	}
	if d, _ := deploys.Get(ctx, "web", metav1.GetOptions{}); d == nil || *d.Spec.Replicas != 3 {
		t.Fatalf("replicas after the deployer let go: %+v", d)
	}

	// A custom resource's scale: the same, at the CRD's specReplicasPath.
	k := newKubectl(t, srv)
	k.ok("apply", "-f", k.file("crd.yaml", widgetCRD))
	k.ok("wait", "--for", "condition=established", "--timeout=60s", "crd/widgets.example.com")
	k.ok("apply", "--server-side", "-f", k.file("w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {size: small, replicas: 2}\n"))
	scaleBody := []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":4}}`)
	path := "/apis/example.com/v1/namespaces/default/widgets/w1/scale"
	rc := srv.Client.Discovery().RESTClient()
	err = rc.Patch(types.ApplyYAMLPatchType).AbsPath(path).Param("fieldManager", "autoscaler").Body(scaleBody).Do(ctx).Error()
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "kubectl"`) {
		t.Fatalf("custom scale apply over kubectl's replicas: %v, want a 409 naming kubectl", err)
	}
	if err := rc.Patch(types.ApplyYAMLPatchType).AbsPath(path).Param("fieldManager", "autoscaler").Param("force", "true").Body(scaleBody).Do(ctx).Error(); err != nil {
		t.Fatalf("forced custom scale apply: %v", err)
	}
	if out := k.ok("get", "widgets", "w1", "-o", "jsonpath={.spec.replicas}"); out != "4" {
		t.Fatalf("widget replicas after the scale apply: %q, want 4", out)
	}
}
