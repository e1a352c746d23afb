package interpodaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
)

func aterm(key string, kv ...string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{kv[0]: kv[1]}}}
}

func nodes() []*v1.Node {
	return []*v1.Node{pt.Node("a1", "4", "8Gi", "zone", "a"), pt.Node("a2", "4", "8Gi", "zone", "a"), pt.Node("b1", "4", "8Gi", "zone", "b"), pt.Node("nozone", "4", "8Gi")}
}

func check(t *testing.T, s interface {
	Get(string) (*framework.NodeInfo, error)
}, pl *InterPodAffinity, p *v1.Pod, want map[string]string) {
	t.Helper()
	state := framework.NewCycleState()
	_, st := pl.PreFilter(context.Background(), state, p)
	if st.IsSkip() {
		for node, w := range want {
			if w != "" {
				t.Errorf("PreFilter skipped but node %s should fail with %q", node, w)
			}
		}
		return
	}
	for node, w := range want {
		ni, _ := s.Get(node)
		if got := pl.Filter(context.Background(), state, p, ni); got.Message() != w {
			t.Errorf("pod %s on %s: %q, want %q", p.Name, node, got.Message(), w)
		}
	}
}

func TestFilter(t *testing.T) {
	db := pt.On(pt.Pod("db", "", "", "app", "db"), "a1")
	guard := pt.On(pt.Pod("guard", "", "", "app", "guard"), "b1")
	guard.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{aterm("zone", "app", "web")}}}
	s := pt.Snapshot(nodes(), db, guard)
	pl, _ := New(context.Background(), nil, pt.Handle{S: s})
	ipa := pl.(*InterPodAffinity)

	near := pt.Pod("near", "", "", "app", "api")
	near.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{aterm("zone", "app", "db")}}}
	check(t, s, ipa, near, map[string]string{"a1": "", "a2": "", "b1": ErrReasonAffinityRulesNotMatch, "nozone": ErrReasonAffinityRulesNotMatch})

	away := pt.Pod("away", "", "", "app", "api")
	away.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{aterm("zone", "app", "db")}}}
	check(t, s, ipa, away, map[string]string{"a1": ErrReasonAntiAffinityRulesNotMatch, "a2": ErrReasonAntiAffinityRulesNotMatch, "b1": "", "nozone": ""})

	// The guard keeps web pods out of its zone.
	web := pt.Pod("web", "", "", "app", "web")
	check(t, s, ipa, web, map[string]string{"a1": "", "b1": ErrReasonExistingAntiAffinityRulesNotMatch})

	// First pod of a self-affine group: allowed where the topology key exists.
	first := pt.Pod("first", "", "", "app", "group")
	first.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{aterm("zone", "app", "group")}}}
	check(t, s, ipa, first, map[string]string{"a1": "", "b1": "", "nozone": ErrReasonAffinityRulesNotMatch})

	// Other namespaces do not count unless listed.
	other := pt.Pod("other", "", "", "app", "api")
	other.Namespace = "prod"
	other.Spec.Affinity = near.Spec.Affinity
	check(t, s, ipa, other, map[string]string{"a1": ErrReasonAffinityRulesNotMatch})
	other.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		TopologyKey: "zone", Namespaces: []string{"default"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}}
	check(t, s, ipa, other, map[string]string{"a1": ""})
}

func TestScore(t *testing.T) {
	db := pt.On(pt.Pod("db", "", "", "app", "db"), "a1")
	s := pt.Snapshot(nodes(), db)
	pl, _ := New(context.Background(), nil, pt.Handle{S: s})
	p := pt.Pod("p", "", "")
	p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
		{Weight: 10, PodAffinityTerm: aterm("zone", "app", "db")}}}}
	got, st := pt.ScoreAll(context.Background(), pl.(framework.ScorePlugin), framework.NewCycleState(), p, s)
	if !st.IsSuccess() || got["a1"] != 100 || got["a2"] != 100 || got["b1"] != 0 || got["nozone"] != 0 {
		t.Fatalf("preferred affinity scores %v", got)
	}
	p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
		{Weight: 10, PodAffinityTerm: aterm("zone", "app", "db")}}}}
	got, _ = pt.ScoreAll(context.Background(), pl.(framework.ScorePlugin), framework.NewCycleState(), p, s)
	if got["a1"] != 0 || got["b1"] != 100 {
		t.Fatalf("preferred anti-affinity scores %v", got)
	}
	if st := pl.(*InterPodAffinity).PreScore(context.Background(), framework.NewCycleState(), pt.Pod("plain", "", ""), nil); !st.IsSkip() {
		t.Fatalf("no terms anywhere: %v, want Skip", st)
	}
}
