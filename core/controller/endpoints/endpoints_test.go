package endpoints

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func pod(name, ip string, ready bool, portName string, port int32) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: portName, ContainerPort: port}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

func svc() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
}

func TestSubsets(t *testing.T) {
	del := metav1.Now()
	gone := pod("gone", "10.0.0.9", true, "http", 8080)
	gone.DeletionTimestamp = &del
	pods := []*corev1.Pod{
		pod("b", "10.0.0.2", true, "http", 8080),
		pod("a", "10.0.0.1", true, "http", 8080),
		pod("c", "10.0.0.3", false, "http", 8080),
		pod("d", "10.0.0.4", true, "http", 9090), // another port: its own subset
		pod("e", "", true, "http", 8080),         // no IP yet
		pod("f", "10.0.0.6", true, "metrics", 8080),
		gone,
	}
	got := Subsets(svc(), pods)
	if len(got) != 2 {
		t.Fatalf("subsets: %+v", got)
	}
	s := got[0]
	if s.Ports[0].Port != 8080 || len(s.Addresses) != 2 || s.Addresses[0].IP != "10.0.0.1" || s.Addresses[1].IP != "10.0.0.2" ||
		len(s.NotReadyAddresses) != 1 || s.NotReadyAddresses[0].IP != "10.0.0.3" {
		t.Fatalf("subset 8080: %+v", s)
	}
	if got[1].Ports[0].Port != 9090 || got[1].Addresses[0].IP != "10.0.0.4" {
		t.Fatalf("subset 9090: %+v", got[1])
	}
	pub := svc()
	pub.Spec.PublishNotReadyAddresses = true
	if s := Subsets(pub, pods)[0]; len(s.Addresses) != 3 || len(s.NotReadyAddresses) != 0 {
		t.Fatalf("publishNotReadyAddresses: %+v", s)
	}
}

// A pod whose spec.subdomain names the Service is published under its spec.hostname (what
// the cluster DNS answers web-0.web.<ns>.svc.<zone> with); one with another subdomain, or
// none, is published without.
func TestSubsetsHostnameForSubdomain(t *testing.T) {
	web0 := pod("web-0", "10.0.0.1", true, "http", 8080)
	web0.Spec.Hostname, web0.Spec.Subdomain = "web-0", "web"
	other := pod("db-0", "10.0.0.2", true, "http", 8080)
	other.Spec.Hostname, other.Spec.Subdomain = "db-0", "db"
	plain := pod("p", "10.0.0.3", true, "http", 8080)
	plain.Spec.Hostname = "p"
	got := Subsets(svc(), []*corev1.Pod{web0, other, plain})
	if len(got) != 1 || len(got[0].Addresses) != 3 {
		t.Fatalf("subsets: %+v", got)
	}
	want := map[string]string{"10.0.0.1": "web-0", "10.0.0.2": "", "10.0.0.3": ""}
	for _, a := range got[0].Addresses {
		if a.Hostname != want[a.IP] {
			t.Errorf("address %s: hostname %q, want %q", a.IP, a.Hostname, want[a.IP])
		}
	}
}

func TestControllerFollowsReadiness(t *testing.T) {
	p := pod("a", "10.0.0.1", true, "http", 8080)
	client := fake.NewClientset(svc(), p)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	go c.Run(ctx, 1)
	wait := func(what string, ok func(*corev1.Endpoints) bool) {
		t.Helper()
		for range 200 {
			ep, err := client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
			if err == nil && ok(ep) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("never: %s", what)
	}
	wait("ready address", func(ep *corev1.Endpoints) bool {
		return len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1
	})
	// The readiness probe fails: the pod moves to notReadyAddresses.
	p2 := p.DeepCopy()
	p2.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("not ready address", func(ep *corev1.Endpoints) bool {
		return len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 0 && len(ep.Subsets[0].NotReadyAddresses) == 1
	})
}
