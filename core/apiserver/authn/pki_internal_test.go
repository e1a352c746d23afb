package authn

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

// The serving certificate covers what an in-cluster client dials: the kubernetes Service's
// cluster IP (client-go's InClusterConfig uses $KUBERNETES_SERVICE_HOST) and its DNS names,
// verified against the CA the pods get as ca.crt; and a certificate issued before these
// names were added (an existing data dir) is reissued at the next start under the same CA.
func TestServingCertificateCoversInClusterNames(t *testing.T) {
	dir := t.TempDir()
	old, err := LoadOrCreatePKI(dir, []string{"127.0.0.1", "localhost", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	if leaf, _ := x509.ParseCertificate(old.Serving.Certificate[0]); leaf.VerifyHostname("10.96.0.1") == nil {
		t.Fatal("setup: the old certificate already covers 10.96.0.1")
	}
	caBefore, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))

	p, err := LoadOrCreatePKI(dir, ServingHosts("127.0.0.1", "", "10.96.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	caAfter, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if string(caBefore) != string(caAfter) {
		t.Fatal("the CA changed when the serving certificate was reissued")
	}
	leaf, err := x509.ParseCertificate(p.Serving.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.caCert)
	for _, name := range []string{"10.96.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local", "127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	// The advertise address (the pod bridge's gateway under `wasmkube up`) is added by a
	// reissue under the same CA.
	p, err = LoadOrCreatePKI(dir, ServingHosts("127.0.0.1", "10.42.0.1", "10.96.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ = x509.ParseCertificate(p.Serving.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "10.42.0.1", Roots: roots}); err != nil {
		t.Errorf("serving certificate for the advertise address: %v", err)
	}
	if got := kubernetesServiceIP("10.43.0.0/16"); got != "10.43.0.1" {
		t.Errorf("kubernetesServiceIP(10.43.0.0/16) = %q, want 10.43.0.1", got)
	}
	if got := kubernetesServiceIP("fd00::/108"); got != "" {
		t.Errorf("kubernetesServiceIP(fd00::/108) = %q, want empty", got)
	}
}
