package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func node(name, zone string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelTopologyZone: zone}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")}}}
}

func pod(name, nodeName, cpu string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

func requested(t *testing.T, s *Snapshot, name string) int64 {
	t.Helper()
	ni, err := s.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ni.Requested.MilliCPU
}

func TestAssumeConfirmForgetAndSnapshot(t *testing.T) {
	c := New()
	c.AddNode(node("a", "z1"))
	c.AddNode(node("b", "z1"))
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	if s.NumNodes() != 2 {
		t.Fatalf("snapshot has %d nodes", s.NumNodes())
	}
	held, _ := s.Get("a")

	p := pod("p", "a", "1")
	if err := c.AssumePod(p); err != nil {
		t.Fatal(err)
	}
	if err := c.AssumePod(p); err == nil {
		t.Fatal("assuming a pod twice must fail")
	}
	c.UpdateSnapshot(s)
	if requested(t, s, "a") != 1000 || held.Requested.MilliCPU != 1000 {
		t.Fatalf("assumed pod not counted (the snapshot NodeInfo must be updated in place)")
	}
	// The informer confirms the binding: still counted once.
	if err := c.AddPod(pod("p", "a", "1")); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	if requested(t, s, "a") != 1000 || c.IsAssumedPod(p) {
		t.Fatalf("confirmed pod: requested %d, assumed %v", requested(t, s, "a"), c.IsAssumedPod(p))
	}
	// A failed binding is forgotten.
	q := pod("q", "b", "2")
	_ = c.AssumePod(q)
	if err := c.ForgetPod(q); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	if requested(t, s, "b") != 0 {
		t.Fatalf("forgotten pod still counted: %d", requested(t, s, "b"))
	}
	if err := c.ForgetPod(p); err == nil {
		t.Fatal("forgetting a confirmed pod must fail")
	}
	if err := c.RemovePod(p); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	if requested(t, s, "a") != 0 {
		t.Fatal("removed pod still counted")
	}
}

func TestRemoveNodeAndZoneInterleave(t *testing.T) {
	c := New()
	for _, n := range []struct{ name, zone string }{{"a1", "a"}, {"a2", "a"}, {"a3", "a"}, {"b1", "b"}, {"c1", "c"}} {
		c.AddNode(node(n.name, n.zone))
	}
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	list, _ := s.List()
	var names []string
	for _, ni := range list {
		names = append(names, ni.Node().Name)
	}
	want := []string{"a1", "b1", "c1", "a2", "a3"}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("order %v, want zones interleaved %v", names, want)
		}
	}
	_ = c.AddPod(pod("p", "b1", "1"))
	c.RemoveNode("b1")
	c.UpdateSnapshot(s)
	if _, err := s.Get("b1"); err == nil || s.NumNodes() != 4 {
		t.Fatalf("removed node still in the snapshot (%d nodes)", s.NumNodes())
	}
	// Its pod's deletion comes later and must not fail.
	if err := c.RemovePod(pod("p", "b1", "1")); err != nil {
		t.Fatal(err)
	}
	if n, p := c.Counts(); n != 4 || p != 0 {
		t.Fatalf("counts %d nodes %d pods", n, p)
	}
}
