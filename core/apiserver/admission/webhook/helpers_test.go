package webhook_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/webhook"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
)

// certFor makes a CA and a serving certificate it signed for the names (IP addresses or
// DNS names); it returns the certificate and the CA's PEM, a webhook's caBundle.
func certFor(t testing.TB, names ...string) (tls.Certificate, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// reviewer answers one AdmissionRequest.
type reviewer func(r *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// hookServer is a test webhook server; calls counts the reviews per path.
type hookServer struct {
	URL    string
	CA     []byte
	mu     sync.Mutex
	calls  map[string]int
	seen   map[string][]*admissionv1.AdmissionRequest
	routes map[string]reviewer
}

func (s *hookServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

func (s *hookServer) requests(path string) []*admissionv1.AdmissionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), s.seen[path]...)
}

func (s *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rev admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls[r.URL.Path]++
	s.seen[r.URL.Path] = append(s.seen[r.URL.Path], rev.Request)
	f := s.routes[r.URL.Path]
	s.mu.Unlock()
	if f == nil {
		http.NotFound(w, r)
		return
	}
	resp := f(r, rev.Request)
	if resp == nil {
		return // the handler gave up (the caller went away)
	}
	resp.UID = rev.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: rev.TypeMeta, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// serveOn starts a hook server on ln with TLS for names.
func serveOn(t testing.TB, ln net.Listener, routes map[string]reviewer, names ...string) *hookServer {
	t.Helper()
	cert, ca := certFor(t, names...)
	hs := &hookServer{CA: ca, calls: map[string]int{}, seen: map[string][]*admissionv1.AdmissionRequest{}, routes: routes}
	srv := httptest.NewUnstartedServer(hs)
	srv.Listener.Close()
	srv.Listener = ln
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	hs.URL = srv.URL
	return hs
}

// startHooks starts a hook server on a loopback ephemeral port.
func startHooks(t testing.TB, routes map[string]reviewer) *hookServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, routes, "127.0.0.1")
}

func allow(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

// source is a Source the test changes between cases.
type source struct {
	mu  sync.Mutex
	mut []*admissionregistrationv1.MutatingWebhookConfiguration
	val []*admissionregistrationv1.ValidatingWebhookConfiguration
}

func (s *source) Configurations(context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mut, s.val, nil
}

// set replaces the configurations (defaulted as the server would).
func (s *source) set(mut []*admissionregistrationv1.MutatingWebhookConfiguration, val ...*admissionregistrationv1.ValidatingWebhookConfiguration) {
	for _, c := range mut {
		defaults.Default(c)
	}
	for _, c := range val {
		defaults.Default(c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mut, s.val = mut, val
}

// recorder is a validating plugin after the webhooks that keeps the last pod create's
// audit annotations.
type recorder struct {
	mu    sync.Mutex
	audit map[string]string
}

func (r *recorder) Validate(_ context.Context, a *admission.Attributes) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.audit = map[string]string{}
	for k, v := range a.AuditAnnotations {
		r.audit[k] = v
	}
	return nil
}

func (r *recorder) get() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.audit
}

// cluster is a real API server whose chain ends with the webhook plugin (then rec).
type cluster struct {
	srv *apiservertest.Server
	src *source
	reg *prometheus.Registry
	rec *recorder
}

func startCluster(t testing.TB, before ...admission.Plugin) *cluster {
	t.Helper()
	c := &cluster{src: &source{}, reg: prometheus.NewRegistry(), rec: &recorder{}}
	wh, err := webhook.New(webhook.Config{Source: c.src, Registerer: c.reg, Default: defaults.Default})
	if err != nil {
		t.Fatal(err)
	}
	plugins := append(append([]admission.Plugin{}, before...), wh, c.rec)
	c.srv = apiservertest.Start(t, apiservertest.WithAdmission(plugins...))
	return c
}

// client records the server's warnings in *warnings.
func (c *cluster) client(t testing.TB, warnings *[]string) kubernetes.Interface {
	cfg := rest.CopyConfig(c.srv.Config)
	var mu sync.Mutex
	cfg.WarningHandler = warningFunc(func(msg string) {
		mu.Lock()
		*warnings = append(*warnings, msg)
		mu.Unlock()
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

type warningFunc func(string)

func (f warningFunc) HandleWarningHeader(_ int, _ string, msg string) { f(msg) }

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

var podRules = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
}}

func ptr[T any](v T) *T { return &v }

// urlHook is a webhook of s at path for pod creates.
func urlHook(s *hookServer, path string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: ptr(s.URL + path), CABundle: s.CA}
}

func validating(name string, hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

func mutating(name string, hooks ...admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

func vhook(name string, cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: cc, Rules: podRules,
		SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
}

func mhook(name string, cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{Name: name, ClientConfig: cc, Rules: podRules,
		SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
}

// labelPatch is a JSONPatch adding label k=v (metadata.labels exists or not).
func labelPatch(req *admissionv1.AdmissionRequest, k, v string) []byte {
	var p corev1.Pod
	_ = json.Unmarshal(req.Object.Raw, &p)
	var ops []map[string]any
	if p.Labels == nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{}})
	}
	ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/" + k, "value": v})
	b, _ := json.Marshal(ops)
	return b
}

// counter is the value of the counter name with labels (in the metric's label order).
func counter(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			lp := m.GetLabel()
			if len(lp) != len(labels) {
				continue
			}
			// Gather sorts labels by name; compare as sets of values.
			want := map[string]int{}
			for _, l := range labels {
				want[l]++
			}
			for _, l := range lp {
				if want[l.GetValue()] == 0 {
					continue metric
				}
				want[l.GetValue()]--
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
