package webhook_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/internal/netnstest"
)

// TestWebhookThroughService: clientConfig.service reaches the webhook at a ready
// endpoint of the Service's EndpointSlice, with TLS verified for hooks.default.svc
// against the caBundle. The webhook server listens in a network namespace of the test's
// own (an endpoint may not be a loopback address), joined to this one by a veth pair of
// 10.85.250.0/30.
func TestWebhookThroughService(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("the service test makes a network namespace: it needs root")
	}
	p := fmt.Sprintf("wkh5w%d", os.Getpid()%100000)
	netnstest.Add(t, p)
	netnstest.Veth(t, p, p, "10.85.250.1/30", "10.85.250.2/30")
	var ln net.Listener
	var err error
	netnstest.Run(t, p, func() { ln, err = net.Listen("tcp", "10.85.250.2:8443") })
	if err != nil {
		t.Fatal(err)
	}
	hs := serveOn(t, ln, map[string]reviewer{
		"/validate": func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: 403, Message: "no pods through the service today"}}
		},
	}, "hooks.default.svc")

	c := startCluster(t)
	ctx := context.Background()
	cs := c.srv.Client
	if _, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hooks-1", Labels: map[string]string{discoveryv1.LabelServiceName: "hooks"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.85.250.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("https"), Port: ptr(int32(8443))}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hooks", Path: ptr("/validate")},
		CABundle: hs.CA}
	c.src.set(nil, validating("through-service", vhook("svc.example.com", svc)))
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod("web", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no pods through the service today") {
		t.Fatalf("create through the service's webhook: %v", err)
	}
	if hs.count("/validate") != 1 {
		t.Fatalf("webhook called %d times", hs.count("/validate"))
	}
	// another CA: the server's certificate is not trusted, the call fails (Fail)
	_, otherCA := certFor(t, "hooks.default.svc")
	svc.CABundle = otherCA
	c.src.set(nil, validating("through-service", vhook("svc.example.com", svc)))
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod("web2", nil), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "x509") {
		t.Fatalf("create with a caBundle that does not sign the server's certificate: %v", err)
	}
}
