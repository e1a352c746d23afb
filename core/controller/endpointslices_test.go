package controller_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/core/controller/endpointslice"
)

// TestEndpointSlicesFollowPods: a Service's pods appear in its EndpointSlices (labels,
// port, node), a pod that turns not ready is kept with ready=false, the slices follow a
// deletion of the Service; a selector-less Service's Endpoints are mirrored; the
// kubernetes Service has its slice from the API server.
func TestEndpointSlicesFollowPods(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 2, ctrl: ctrlOpts()})
	if _, err := e.client.AppsV1().Deployments("default").Create(e.ctx, newDeployment("svc", 3, "busybox:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "svc"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := e.client.CoreV1().Services("default").Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slices := func(name, managedBy string) ([]discoveryv1.EndpointSlice, error) {
		l, err := e.client.DiscoveryV1().EndpointSlices("default").List(e.ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + name + "," + discoveryv1.LabelManagedBy + "=" + managedBy})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	ready := func(es []discoveryv1.EndpointSlice) (r, nr int) {
		for _, s := range es {
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					r++
				} else {
					nr++
				}
			}
		}
		return r, nr
	}
	e.eventually("3 ready endpoints in one slice", func() (bool, error) {
		es, err := slices("svc", endpointslice.ManagedBy)
		if err != nil {
			return false, err
		}
		if len(es) != 1 {
			return false, fmt.Errorf("%d slices", len(es))
		}
		s := es[0]
		if len(s.Ports) != 1 || *s.Ports[0].Port != 8080 || *s.Ports[0].Name != "http" {
			return false, fmt.Errorf("ports %+v", s.Ports)
		}
		for _, ep := range s.Endpoints {
			if ep.NodeName == nil || ep.TargetRef == nil {
				return false, fmt.Errorf("endpoint without node or targetRef: %+v", ep)
			}
		}
		r, _ := ready(es)
		return r == 3, fmt.Errorf("%d ready", r)
	})
	p := e.activePods("default", "svc")[0]
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	if _, err := e.client.CoreV1().Pods("default").UpdateStatus(e.ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("one endpoint not ready", func() (bool, error) {
		es, err := slices("svc", endpointslice.ManagedBy)
		if err != nil {
			return false, err
		}
		r, nr := ready(es)
		return r == 2 && nr == 1, fmt.Errorf("%d ready, %d not", r, nr)
	})

	// A selector-less Service with Endpoints of its own: mirrored.
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "db", Port: 5432}}}}
	if _, err := e.client.CoreV1().Services("default").Create(e.ctx, ext, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.10"}}, Ports: []corev1.EndpointPort{{Name: "db", Port: 5432}}}}}
	if _, err := e.client.CoreV1().Endpoints("default").Create(e.ctx, ep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("mirrored slice", func() (bool, error) {
		es, err := slices("ext", endpointslice.MirrorManagedBy)
		if err != nil {
			return false, err
		}
		return len(es) == 1 && len(es[0].Endpoints) == 1 && es[0].Endpoints[0].Addresses[0] == "192.0.2.10", fmt.Errorf("%+v", es)
	})

	// The kubernetes Service's slice, from the API server.
	k, err := e.client.DiscoveryV1().EndpointSlices("default").Get(e.ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(k.Endpoints) != 1 || k.Labels[discoveryv1.LabelServiceName] != "kubernetes" {
		t.Fatalf("kubernetes slice: %v %+v", err, k)
	}

	// The Service goes: so do its slices.
	if err := e.client.CoreV1().Services("default").Delete(e.ctx, "svc", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("slices deleted", func() (bool, error) {
		es, err := slices("svc", endpointslice.ManagedBy)
		return err == nil && len(es) == 0, err
	})
}

// TestLoadBalancerGetsNodeAddresses: a LoadBalancer Service gets the Ready nodes'
// InternalIPs as its ingress instead of staying pending, and a ClusterIP one none.
func TestLoadBalancerGetsNodeAddresses(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 2, ctrl: ctrlOpts()})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "lb"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := e.client.CoreV1().Services("default").Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes, err := e.client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				want[a.Address] = true
			}
		}
	}
	e.eventually("ingress of every node", func() (bool, error) {
		s, err := e.client.CoreV1().Services("default").Get(e.ctx, "lb", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := map[string]bool{}
		for _, in := range s.Status.LoadBalancer.Ingress {
			got[in.IP] = true
		}
		return len(want) > 0 && fmt.Sprint(got) == fmt.Sprint(want), fmt.Errorf("ingress %v, want %v", s.Status.LoadBalancer.Ingress, want)
	})
}
