package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeRestrictionLabelsAndTaints(t *testing.T) {
	n1 := UserInfo{Name: NodeUserPrefix + "n1", Groups: []string{NodesGroup}}
	node := func(labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	base := map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "team": "a"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	nodesGVR := corev1.SchemeGroupVersion.WithResource("nodes")
	cases := []struct {
		name     string
		op       Operation
		obj, old *corev1.Node
		user     UserInfo
		denied   string // substring of the refusal, "" = admitted
	}{
		{"register with kubelet labels", Create, node(base), nil, n1, ""},
		{"register with node-restriction label", Create, node(with("node-restriction.kubernetes.io/pool", "gpu")), nil, n1, "node-restriction.kubernetes.io/pool"},
		{"register with a subdomain of it", Create, node(with("x.node-restriction.kubernetes.io/a", "b")), nil, n1, "x.node-restriction.kubernetes.io/a"},
		{"register with node-role label", Create, node(with("node-role.kubernetes.io/control-plane", "")), nil, n1, "node-role.kubernetes.io/control-plane"},
		{"register with node.kubernetes.io label", Create, node(with("node.kubernetes.io/exclude-from-external-load-balancers", "")), nil, n1, ""},
		{"add node-restriction label", Update, node(with("node-restriction.kubernetes.io/pool", "gpu")), node(base), n1, "not allowed to modify"},
		{"keep an admin's node-restriction label", Update, node(with("node-restriction.kubernetes.io/pool", "gpu")), node(with("node-restriction.kubernetes.io/pool", "gpu")), n1, ""},
		{"drop an admin's node-restriction label", Update, node(base), node(with("node-restriction.kubernetes.io/pool", "gpu")), n1, "node-restriction.kubernetes.io/pool"},
		{"change a plain label", Update, node(with("team", "b")), node(base), n1, ""},
		{"change taints", Update, node(base, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}), node(base), n1, "taints"},
		{"admin may", Update, node(with("node-restriction.kubernetes.io/pool", "gpu")), node(base), UserInfo{Name: "admin", Groups: []string{"system:masters"}}, ""},
	}
	for _, c := range cases {
		a := &Attributes{Operation: c.op, Resource: nodesGVR, Name: "n1", Object: c.obj, User: c.user}
		if c.old != nil {
			a.OldObject = c.old
		}
		err := (NodeRestriction{}).Validate(context.Background(), a)
		switch {
		case c.denied == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.denied != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.denied)):
			t.Errorf("%s: got %v, want a 403 naming %q", c.name, err, c.denied)
		}
	}
}
