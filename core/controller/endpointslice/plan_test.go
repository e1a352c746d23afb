package endpointslice

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pod(name, ip string, ready bool, port int32) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

func service() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "svc-uid", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}}
}

func TestPodGroups(t *testing.T) {
	del := metav1.Now()
	gone := pod("gone", "10.0.0.9", true, 8080)
	gone.DeletionTimestamp = &del
	done := pod("done", "10.0.0.8", false, 8080)
	done.Status.Phase = corev1.PodSucceeded
	pods := []*corev1.Pod{
		pod("b", "10.0.0.2", true, 8080),
		pod("a", "10.0.0.1", true, 8080),
		pod("c", "10.0.0.3", false, 8080),
		pod("d", "10.0.0.4", true, 9090), // another port: a group of its own
		pod("e", "", true, 8080),         // no IP yet
		gone, done,
	}
	groups := PodGroups(service(), pods, map[string]string{"n1": "zone-a"})
	if len(groups) != 2 {
		t.Fatalf("groups: %+v", groups)
	}
	g := groups[0]
	if *g.Ports[0].Port != 8080 || *g.Ports[0].Name != "http" || *g.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("ports: %+v", g.Ports)
	}
	type cond struct{ ready, serving, terminating bool }
	want := map[string]cond{"10.0.0.1": {true, true, false}, "10.0.0.2": {true, true, false}, "10.0.0.3": {false, false, false},
		"10.0.0.9": {false, true, true}}
	if len(g.Endpoints) != len(want) {
		t.Fatalf("endpoints: %+v", g.Endpoints)
	}
	for i, e := range g.Endpoints {
		if i > 0 && g.Endpoints[i-1].Addresses[0] >= e.Addresses[0] {
			t.Errorf("not sorted: %v", g.Endpoints)
		}
		c := e.Conditions
		if got := (cond{*c.Ready, *c.Serving, *c.Terminating}); got != want[e.Addresses[0]] {
			t.Errorf("%s: conditions %+v, want %+v", e.Addresses[0], got, want[e.Addresses[0]])
		}
		if *e.NodeName != "n1" || *e.Zone != "zone-a" || e.TargetRef == nil || e.TargetRef.Kind != "Pod" {
			t.Errorf("%s: node, zone or targetRef: %+v", e.Addresses[0], e)
		}
	}
	if *groups[1].Ports[0].Port != 9090 || groups[1].Endpoints[0].Addresses[0] != "10.0.0.4" {
		t.Fatalf("group 9090: %+v", groups[1])
	}
	pub := service()
	pub.Spec.PublishNotReadyAddresses = true
	for _, e := range PodGroups(pub, pods, nil)[0].Endpoints {
		if !*e.Conditions.Ready {
			t.Errorf("publishNotReadyAddresses: %s not ready", e.Addresses[0])
		}
	}
}

func TestEndpointsGroups(t *testing.T) {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default"},
		Subsets: []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{{IP: "192.0.2.2"}, {IP: "192.0.2.1", Hostname: "one"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.0.2.3"}},
			Ports:             []corev1.EndpointPort{{Name: "db", Port: 5432}},
		}}}
	g := EndpointsGroups(ep)
	if len(g) != 1 || len(g[0].Endpoints) != 3 || *g[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("groups: %+v", g)
	}
	if e := g[0].Endpoints[0]; e.Addresses[0] != "192.0.2.1" || *e.Hostname != "one" || !*e.Conditions.Ready {
		t.Errorf("first: %+v", e)
	}
	if e := g[0].Endpoints[2]; e.Addresses[0] != "192.0.2.3" || *e.Conditions.Ready {
		t.Errorf("not ready: %+v", e)
	}
}

// stored turns what Reconcile created into what the API server would hold.
func stored(ch Changes, existing []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, es := range existing {
		byName[es.Name] = es
	}
	for _, es := range ch.Delete {
		delete(byName, es.Name)
	}
	for _, es := range ch.Update {
		byName[es.Name] = es
	}
	for i, es := range ch.Create {
		c := es.DeepCopy()
		c.Name = fmt.Sprintf("%s%05d", es.GenerateName, len(byName)+i)
		byName[c.Name] = c
	}
	var out []*discoveryv1.EndpointSlice
	for _, es := range byName {
		out = append(out, es)
	}
	return out
}

func podsN(n int, port int32) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, pod(fmt.Sprintf("p%03d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), true, port))
	}
	return out
}

func TestReconcile(t *testing.T) {
	svc := service()
	owner := Owner{Service: svc, ManagedBy: ManagedBy, MaxPerSlice: 100}
	count := func(slices []*discoveryv1.EndpointSlice) (n int) {
		for _, es := range slices {
			n += len(es.Endpoints)
		}
		return n
	}

	// 250 pods: three slices of at most 100, labelled and owned by the Service.
	groups := PodGroups(svc, podsN(250, 8080), nil)
	ch := Reconcile(owner, groups, nil)
	if len(ch.Create) != 3 || len(ch.Update)+len(ch.Delete) != 0 {
		t.Fatalf("first: %d creates, %d updates, %d deletes", len(ch.Create), len(ch.Update), len(ch.Delete))
	}
	for _, es := range ch.Create {
		if len(es.Endpoints) > 100 || es.GenerateName != "web-" || es.AddressType != discoveryv1.AddressTypeIPv4 {
			t.Errorf("slice: %d endpoints, generateName %q", len(es.Endpoints), es.GenerateName)
		}
		if es.Labels[discoveryv1.LabelServiceName] != "web" || es.Labels[discoveryv1.LabelManagedBy] != ManagedBy || es.Labels["team"] != "a" {
			t.Errorf("labels: %v", es.Labels)
		}
		if r := es.OwnerReferences; len(r) != 1 || r[0].UID != "svc-uid" || !*r[0].Controller {
			t.Errorf("owner: %+v", r)
		}
	}
	slices := stored(ch, nil)

	// Nothing changed: nothing to do.
	if ch := Reconcile(owner, groups, slices); !ch.Empty() {
		t.Fatalf("steady state: %+v", ch)
	}

	// One pod turns not ready: exactly one slice is rewritten.
	pods := podsN(250, 8080)
	pods[120].Status.Conditions[0].Status = corev1.ConditionFalse
	ch = Reconcile(owner, PodGroups(svc, pods, nil), slices)
	if len(ch.Update) != 1 || len(ch.Create)+len(ch.Delete) != 0 {
		t.Fatalf("one pod not ready: %d creates, %d updates, %d deletes", len(ch.Create), len(ch.Update), len(ch.Delete))
	}
	slices = stored(ch, slices)

	// Scaled to 30: the endpoints that stay stay where they were; nothing is created.
	ch = Reconcile(owner, PodGroups(svc, podsN(30, 8080), nil), slices)
	slices = stored(ch, slices)
	if count(slices) != 30 || len(ch.Create) != 0 {
		t.Fatalf("scaled down: %d endpoints in %d slices (%d created)", count(slices), len(slices), len(ch.Create))
	}
	// Scaled to 2: the slices left empty are deleted.
	ch = Reconcile(owner, PodGroups(svc, podsN(2, 8080), nil), slices)
	slices = stored(ch, slices)
	if count(slices) != 2 || len(slices) > 2 || len(ch.Delete) == 0 {
		t.Fatalf("scaled to 2: %d endpoints in %d slices", count(slices), len(slices))
	}

	// Scaled to 130: the kept slices fill to 100 before a new one is made.
	ch = Reconcile(owner, PodGroups(svc, podsN(130, 8080), nil), slices)
	kept := len(slices)
	slices = stored(ch, slices)
	if count(slices) != 130 || len(slices) != 2 || len(ch.Create) != 2-kept {
		t.Fatalf("scaled up: %d endpoints in %d slices", count(slices), len(slices))
	}
	for _, es := range slices {
		if len(es.Endpoints) > 100 {
			t.Fatalf("slice of %d endpoints", len(es.Endpoints))
		}
	}

	// The target port changes: the old slices go, new ones hold the new port.
	ch = Reconcile(owner, PodGroups(svc, podsN(130, 9090), nil), slices)
	if len(ch.Delete) != 2 || len(ch.Create) != 2 || *ch.Create[0].Ports[0].Port != 9090 {
		t.Fatalf("port change: %d creates, %d deletes", len(ch.Create), len(ch.Delete))
	}
	slices = stored(ch, slices)

	// No pods: one placeholder slice without ports or endpoints, as upstream.
	ch = Reconcile(owner, nil, slices)
	if len(ch.Delete) != 2 || len(ch.Create) != 1 || len(ch.Create[0].Endpoints) != 0 || len(ch.Create[0].Ports) != 0 {
		t.Fatalf("placeholder: %+v", ch)
	}
	slices = stored(ch, slices)
	if ch := Reconcile(owner, nil, slices); !ch.Empty() {
		t.Fatalf("placeholder kept: %+v", ch)
	}

	// A headless Service's slices carry service.kubernetes.io/headless.
	headless := service()
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	ch = Reconcile(Owner{Service: headless, ManagedBy: ManagedBy}, PodGroups(headless, podsN(1, 80), nil), nil)
	if _, ok := ch.Create[0].Labels[corev1.IsHeadlessService]; !ok {
		t.Errorf("headless label missing: %v", ch.Create[0].Labels)
	}
}
