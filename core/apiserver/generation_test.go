package apiserver_test

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// An update that leaves out only defaulted fields is no new generation, as upstream
// defaults before its strategy compares the specs (kubectl apply of the same manifest
// twice leaves metadata.generation alone); a real spec change is one.
func TestGenerationIgnoresDefaultedFields(t *testing.T) {
	srv := apiservertest.Start(t)
	c := kubernetes.NewForConfigOrDie(srv.Config)

	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "busybox:1.36"}}},
			},
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, d.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, err := c.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The manifest again, as a user's update: no strategy, history limit, pull policy...
	again := d.DeepCopy()
	again.ResourceVersion = cur.ResourceVersion
	got, err := c.AppsV1().Deployments("default").Update(ctx, again, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != cur.Generation {
		t.Fatalf("the same manifest again: generation %d -> %d, want it unchanged", cur.Generation, got.Generation)
	}
	two := int32(2)
	got.Spec.Replicas = &two
	if got, err = c.AppsV1().Deployments("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.Generation != cur.Generation+1 {
		t.Fatalf("replicas changed: generation %d, want %d", got.Generation, cur.Generation+1)
	}

	// A ValidatingAdmissionPolicy whose rules leave out scope (defaulted to "*").
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 3"}},
		},
	}
	created, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, vap.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again2 := vap.DeepCopy()
	again2.ResourceVersion = created.ResourceVersion
	got2, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(ctx, again2, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got2.Generation != created.Generation {
		t.Fatalf("the same policy again: generation %d -> %d, want it unchanged", created.Generation, got2.Generation)
	}
}
