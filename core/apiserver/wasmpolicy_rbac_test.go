package apiserver_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

var wasmPolicies = policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicies")

func dynamicAs(t *testing.T, srv *apiservertest.Server, user string) dynamic.Interface {
	t.Helper()
	cfg := rest.CopyConfig(srv.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func policyObject(t *testing.T, name string, spec policyv1alpha1.WasmPolicySpec) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&policyv1alpha1.WasmPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// TestWasmPolicyCapabilitiesNeedTheWritersGrants: with the example ClusterRoles
// (examples/wasmpolicy-rbac.yaml), a user without the wasmpolicies verbs is refused; an
// author may write a policy without capabilities but not one whose capabilities it could
// not read itself (403 naming the field, the capability and what is missing, for the
// admission capabilities and the kubelet's pod-network), nor swap the module of a policy
// that has them; once it holds get and list on the resources, it may.
func TestWasmPolicyCapabilitiesNeedTheWritersGrants(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	f, err := os.Open("../../examples/wasmpolicy-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var cr rbacv1.ClusterRole
		if err := dec.Decode(&cr); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Client.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(name, role, user string) {
		_, err := srv.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	bind("bob-author", "wasmpolicy-author", "bob")

	validate := func(caps ...string) policyv1alpha1.WasmPolicySpec {
		return policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookAdmissionValidate, Module: policyv1alpha1.ModuleSource{File: "/m.wasm"},
			Admission: &policyv1alpha1.AdmissionHook{Capabilities: caps,
				Rules: []policyv1alpha1.Rule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Operations: []string{"CREATE"}}}}}
	}
	carol, bob := dynamicAs(t, srv, "carol").Resource(wasmPolicies), dynamicAs(t, srv, "bob").Resource(wasmPolicies)

	if _, err := carol.Create(ctx, policyObject(t, "c", validate()), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("carol, without the wasmpolicies verbs: %v", err)
	}
	eventually(t, "bob may create a policy without capabilities", func() error {
		_, err := bob.Create(ctx, policyObject(t, "plain", validate()), metav1.CreateOptions{})
		return err
	})
	_, err = bob.Create(ctx, policyObject(t, "reads", validate("namespaces", "configmaps")), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `spec.admission.capabilities[0]: capability "namespaces"`) ||
		!strings.Contains(err.Error(), "may not get and list namespaces in all namespaces") {
		t.Fatalf("capabilities bob cannot read: %v", err)
	}
	probe := policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookKubeletProbe, Module: policyv1alpha1.ModuleSource{File: "/m.wasm"},
		Kubelet: &policyv1alpha1.KubeletHook{HookName: "h", Capabilities: []string{"pod-network"}}}
	_, err = bob.Create(ctx, policyObject(t, "net", probe), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `spec.kubelet.capabilities[0]: capability "pod-network"`) || !strings.Contains(err.Error(), "pods/proxy") {
		t.Fatalf("pod-network without pods/proxy: %v", err)
	}

	// The admin makes a policy with capabilities; bob may not swap its module.
	dAdmin, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dAdmin.Resource(wasmPolicies).Create(ctx, policyObject(t, "reads", validate("namespaces", "configmaps")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	swap := func() error {
		u, err := bob.Get(ctx, "reads", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, "/other.wasm", "spec", "module", "file"); err != nil {
			return err
		}
		_, err = bob.Update(ctx, u, metav1.UpdateOptions{})
		return err
	}
	if err := swap(); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "capability") {
		t.Fatalf("bob swapped the module of a policy with capabilities he does not hold: %v", err)
	}

	// With get and list on them, bob may.
	bind("bob-caps", "wasmpolicy-capabilities-namespaces-configmaps", "bob")
	eventually(t, "bob may grant namespaces and configmaps", func() error {
		_, err := bob.Create(ctx, policyObject(t, "reads2", validate("namespaces", "configmaps")), metav1.CreateOptions{})
		return err
	})
	if err := swap(); err != nil {
		t.Fatalf("bob, holding the grants, swapping the module: %v", err)
	}
}

// TestNodeWritesOnlyItsOwnWasmPolicyReports: a kubelet's credential may write its own
// report on a policy, not one in another node's name nor in another component's.
func TestNodeWritesOnlyItsOwnWasmPolicyReports(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	reports := dynamic.NewForConfigOrDie(srv.NodeConfig(t, "n1")).Resource(policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicyreports"))
	obj := func(name, component, instance string) *unstructured.Unstructured {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&policyv1alpha1.WasmPolicyReport{
			TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicyReport"},
			ObjectMeta: metav1.ObjectMeta{Name: name}, Policy: "p",
			Status: policyv1alpha1.ComponentStatus{Name: instance, Component: component, Phase: policyv1alpha1.PhaseActive, ObservedGeneration: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: m}
	}
	if _, err := reports.Create(ctx, obj("p.kubelet.n1", "kubelet", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("n1's own report: %v", err)
	}
	for _, o := range []*unstructured.Unstructured{obj("p.kubelet.n2", "kubelet", "n2"), obj("p.apiserver.n1", "apiserver", "n1")} {
		_, err := reports.Create(ctx, o, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `node "n1" may only write WasmPolicyReports of component kubelet named n1`) {
			t.Errorf("n1 writing %s: %v", o.GetName(), err)
		}
	}
}
