package authz

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// The WasmPolicy edge of the node authorizer: a node may get a Secret a kubelet policy
// names in its imagePullSecrets when the policy's nodeSelector selects the node, and
// nothing else; a refusal names the policy that does not select it.
func TestPullSecretGrant(t *testing.T) {
	pol := func(name string, hook policyv1alpha1.Hook, sel map[string]string, secrets ...string) *policyv1alpha1.WasmPolicy {
		p := &policyv1alpha1.WasmPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.Hook = hook
		p.Spec.Module.Image = "registry.example/policies/" + name + ":v1"
		for _, s := range secrets {
			ns, n, _ := strings.Cut(s, "/")
			p.Spec.Module.ImagePullSecrets = append(p.Spec.Module.ImagePullSecrets, corev1.SecretReference{Namespace: ns, Name: n})
		}
		if hook.ComponentOf() == policyv1alpha1.ComponentKubelet {
			p.Spec.Kubelet = &policyv1alpha1.KubeletHook{HookName: name}
			if sel != nil {
				p.Spec.Kubelet.NodeSelector = &metav1.LabelSelector{MatchLabels: sel}
			}
		}
		return p
	}
	zoneA := map[string]string{"zone": "a"}
	probeA := pol("probe-a", policyv1alpha1.HookKubeletProbe, zoneA, "creds/regcred")
	anywhere := pol("anywhere", policyv1alpha1.HookKubeletPreStop, nil, "creds/everyone")
	admission := pol("admission", policyv1alpha1.HookAdmissionValidate, nil, "creds/apiservers")
	bad := pol("bad-selector", policyv1alpha1.HookKubeletProbe, nil, "creds/bad")
	bad.Spec.Kubelet.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Bogus"}}}
	all := []*policyv1alpha1.WasmPolicy{admission, anywhere, bad, probeA}

	for _, c := range []struct {
		name       string
		node       string
		labels     map[string]string
		secret     string
		want       bool
		wantReason string // a part of the reason; "" for none
	}{
		{"selected node, named secret", "n1", map[string]string{"zone": "a", "x": "y"}, "creds/regcred", true, ""},
		{"node the selector does not match", "n2", map[string]string{"zone": "b"}, "creds/regcred", false, `WasmPolicy "probe-a" names this Secret in spec.module.imagePullSecrets, but its spec.kubelet.nodeSelector (zone=a) does not select node "n2"`},
		{"secret no policy names", "n1", zoneA, "creds/other", false, ""},
		{"same name, other namespace", "n1", zoneA, "default/regcred", false, ""},
		{"no selector: every node", "n2", map[string]string{}, "creds/everyone", true, ""},
		{"node without a Node object", "n9", nil, "creds/everyone", false, `node "n9" has no Node object`},
		{"an admission policy's secret is the API servers'", "n1", zoneA, "creds/apiservers", false, ""},
		{"an invalid selector selects nothing", "n1", zoneA, "creds/bad", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns, name, _ := strings.Cut(c.secret, "/")
			ok, reason := pullSecretGrant(all, c.node, c.labels, ns, name)
			if ok != c.want {
				t.Fatalf("granted %v, want %v (reason %q)", ok, c.want, reason)
			}
			if c.wantReason == "" && reason != "" || !strings.Contains(reason, c.wantReason) {
				t.Fatalf("reason %q, want %q", reason, c.wantReason)
			}
		})
	}
}
