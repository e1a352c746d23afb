package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestUpNodesServicesAndPolicies runs `wasmkube up --nodes 2` and checks what rides on the
// pod network across the two hosts: a Service's EndpointSlice lists the pods of both hosts
// and a pod on each host reaches it by name; the LoadBalancer Service gets both nodes'
// addresses and answers on the other host's address from this one; services/proxy and
// pods/proxy reach the pod on the other host; a default-deny NetworkPolicy blocks a
// cross-host connection, and an allow rule for role=client opens it for exactly that
// client. Its own resources: host bridge wkh5t (namespace wkh5t-2), host network
// 172.30.65.0/24, pod bridge wkh5p0, cluster CIDR 10.65.0.0/16, API port 56443.
func TestUpNodesServicesAndPolicies(t *testing.T) {
	u := startUp(t, testUpOptions{Name: "wkh5", Nodes: 2, Port: "56443", HostNetwork: "172.30.65.0/24",
		ClusterCIDR: "10.65.0.0/16"})
	client, kubectl := u.Client, u.kubectl
	ctx := context.Background()
	nodes := []string{"wkh5", "wkh5-2"}
	waitUntil(t, "two Ready nodes", func() bool {
		for _, n := range nodes {
			node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || !nodeReady(node) {
				return false
			}
		}
		return true
	})

	// One web pod per node; a client pod (role=client) on the first.
	replicas := int32(2)
	labels := map[string]string{"app": "web"}
	busybox := func(name, script string) corev1.Container {
		return corev1.Container{Name: name, Image: "wasmkube.local/busybox", ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-c", script}}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
				TerminationGracePeriodSeconds: new(int64),
				Containers:                    []corev1.Container{busybox("web", "mkdir -p /www; hostname > /www/index.html; exec httpd -f -p 8080 -h /www")},
			}}}}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clientPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: "default", Labels: map[string]string{"role": "client"}},
		Spec: corev1.PodSpec{NodeName: "wkh5", TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{busybox("c", "exec sleep 100000")}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, clientPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, Selector: labels,
		Ports: []corev1.ServicePort{{Name: "http", Port: 56461, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := map[string]corev1.Pod{} // node -> its web pod
	waitUntil(t, "a running web pod on each node and the client", func() bool {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		web = map[string]corev1.Pod{}
		clientUp := false
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				continue
			}
			if p.Labels["app"] == "web" {
				web[p.Spec.NodeName] = p
			}
			clientUp = clientUp || p.Name == "client"
		}
		return len(web) == 2 && clientUp
	})
	remote := web["wkh5-2"]

	// The Service's slices list both hosts' pods; the Service answers by name from a pod
	// on each host, and both backends answer.
	waitUntil(t, "an EndpointSlice with an endpoint on each node", func() bool {
		l, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=web"})
		if err != nil {
			return false
		}
		on := map[string]bool{}
		for _, es := range l.Items {
			for _, ep := range es.Endpoints {
				if ep.NodeName != nil && ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					on[*ep.NodeName] = true
				}
			}
		}
		return on["wkh5"] && on["wkh5-2"]
	})
	for _, from := range []string{"client", web["wkh5-2"].Name} {
		seen := map[string]bool{}
		for i := 0; i < 12 && len(seen) < 2; i++ {
			out, err := kubectl("exec", from, "--", "timeout", "10", "wget", "-qO-", "http://web:56461/")
			if err == nil {
				seen[strings.TrimSpace(out)] = true
			}
		}
		if len(seen) != 2 {
			t.Errorf("from %s, http://web:56461/ answered by %v, want both web pods", from, seen)
		}
	}

	// LoadBalancer: both nodes' addresses; the other host's answers from here.
	var ingress []string
	waitUntil(t, "the LoadBalancer's ingress", func() bool {
		s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		ingress = nil
		for _, in := range s.Status.LoadBalancer.Ingress {
			ingress = append(ingress, in.IP)
		}
		return len(ingress) == 2
	})
	for _, ip := range ingress {
		var body string
		for i := 0; i < 20 && body == ""; i++ {
			c := http.Client{Timeout: 3 * time.Second}
			if resp, err := c.Get("http://" + ip + ":56461/"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body = strings.TrimSpace(string(b))
			} else {
				time.Sleep(500 * time.Millisecond)
			}
		}
		if !strings.HasPrefix(body, "web-") {
			t.Errorf("LoadBalancer address %s:56461 from the host: %q", ip, body)
		}
	}

	// The API server's proxies reach the pod on the other host.
	if out, err := kubectl("get", "--raw", "/api/v1/namespaces/default/pods/"+remote.Name+":8080/proxy/"); err != nil || strings.TrimSpace(out) != remote.Name {
		t.Errorf("pods/proxy to %s on wkh5-2: %v: %q", remote.Name, err, out)
	}
	if out, err := kubectl("get", "--raw", "/api/v1/namespaces/default/services/web:56461/proxy/"); err != nil || !strings.HasPrefix(strings.TrimSpace(out), "web-") {
		t.Errorf("services/proxy: %v: %q", err, out)
	}

	// NetworkPolicy across hosts: the client on wkh5 to the web pod on wkh5-2.
	reach := func(from string) bool {
		_, err := kubectl("exec", from, "--", "timeout", "3", "wget", "-qO-", "http://"+remote.Status.PodIP+":8080/")
		return err == nil
	}
	if !reach("client") || !reach(web["wkh5"].Name) {
		t.Fatalf("before any policy, %s is not reachable across hosts", remote.Name)
	}
	nps := client.NetworkingV1().NetworkPolicies("default")
	if _, err := nps.Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the default deny blocking the client across hosts", func() bool { return !reach("client") })
	port := intstr.FromInt32(8080)
	if _, err := nps.Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: labels},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Port: &port}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the allow rule letting the client in across hosts", func() bool { return reach("client") })
	if reach(web["wkh5"].Name) {
		t.Errorf("the web pod on wkh5 (not role=client) reaches %s across hosts through the allow rule", remote.Name)
	}
}
