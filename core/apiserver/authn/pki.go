package authn

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/wasmkube/wasmkube/core/apiserver/authz"
)

// PKI holds the cluster CA and the serving certificate, both kept in <data-dir>/pki.
type PKI struct {
	CAPEM   []byte
	caCert  *x509.Certificate
	caKey   *ecdsa.PrivateKey
	Serving tls.Certificate
}

// LoadOrCreatePKI reads the CA from dir or creates it on first start, and issues a
// serving certificate covering hosts (reissued when a host is missing from the stored
// one, so changing --listen keeps working without discarding the CA).
func LoadOrCreatePKI(dir string, hosts []string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki dir: %w", err)
	}
	p := &PKI{}
	caCrt, caKey := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if _, err := os.Stat(caCrt); errors.Is(err, os.ErrNotExist) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber:          serial(),
			Subject:               pkix.Name{CommonName: "wasmkube-ca"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().AddDate(10, 0, 0),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return nil, fmt.Errorf("create CA: %w", err)
		}
		if err := writePair(caCrt, caKey, der, key); err != nil {
			return nil, err
		}
	}
	pair, err := tls.LoadX509KeyPair(caCrt, caKey)
	if err != nil {
		return nil, fmt.Errorf("load CA from %s: %w", dir, err)
	}
	p.caCert, err = x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	var ok bool
	if p.caKey, ok = pair.PrivateKey.(*ecdsa.PrivateKey); !ok {
		return nil, fmt.Errorf("CA key in %s is not ECDSA", caKey)
	}
	if p.CAPEM, err = os.ReadFile(caCrt); err != nil {
		return nil, err
	}

	srvCrt, srvKey := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	if s, err := tls.LoadX509KeyPair(srvCrt, srvKey); err == nil {
		leaf, perr := x509.ParseCertificate(s.Certificate[0])
		if perr == nil && coversHosts(leaf, hosts) && leaf.CheckSignatureFrom(p.caCert) == nil &&
			time.Now().Before(leaf.NotAfter.Add(-24*time.Hour)) {
			p.Serving = s
			return p, nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "wasmkube-apiserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return nil, fmt.Errorf("issue serving certificate: %w", err)
	}
	if err := writePair(srvCrt, srvKey, der, key); err != nil {
		return nil, err
	}
	if p.Serving, err = tls.LoadX509KeyPair(srvCrt, srvKey); err != nil {
		return nil, err
	}
	return p, nil
}

func coversHosts(c *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if c.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

func writePair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return err
	}
	return WriteFileAtomic(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// WriteFileAtomic writes through a temporary file and a rename, so a crash never leaves
// a half-written credential. A file that already holds data with mode is left alone: a
// restart rewrites nothing it does not change, so it also starts on a full disk.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == mode.Perm() && fi.Size() == int64(len(data)) {
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
			return nil
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		_ = os.Remove(tmp) // a partial file (a full disk) is not left behind
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// randomToken returns n random bytes as hex.
func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// CAHash is the sha256 of the CA certificate file (PEM), as carried in join tokens.
func CAHash(caPEM []byte) string {
	sum := sha256.Sum256(caPEM)
	return hex.EncodeToString(sum[:])
}

// ServingHosts are the names and addresses the serving certificate must cover for a
// listen address: loopback always, the names and cluster IP of the `default/kubernetes`
// Service (what in-cluster clients dial: client-go's rest.InClusterConfig goes to
// https://$KUBERNETES_SERVICE_HOST, the service range's first address, and checks the
// certificate against the mounted ca.crt; upstream's kube-apiserver and kubeadm put the
// same names in theirs), the listen host, the advertise address (where the kubernetes
// Endpoints send in-cluster clients: the pod bridge's gateway under `wasmkube up`; a client
// that dials it directly checks it too), and for a wildcard listen every address of this
// machine plus its host name.
func ServingHosts(listenHost, advertise, serviceCIDR string) []string {
	hosts := []string{"127.0.0.1", "localhost", "::1",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if ip := kubernetesServiceIP(serviceCIDR); ip != "" {
		hosts = append(hosts, ip)
	}
	add := func(h string) {
		for _, x := range hosts {
			if x == h {
				return
			}
		}
		hosts = append(hosts, h)
	}
	if advertise != "" {
		add(advertise)
	}
	switch listenHost {
	case "", "0.0.0.0", "::":
		if hn, err := os.Hostname(); err == nil {
			add(hn)
		}
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok {
					add(ipn.IP.String())
				}
			}
		}
	default:
		add(listenHost)
	}
	return hosts
}

// kubernetesServiceIP is the cluster IP of `default/kubernetes`: the first address of the
// service range (empty for a range that is not IPv4; the allocator refuses those).
func kubernetesServiceIP(serviceCIDR string) string {
	_, cidr, err := net.ParseCIDR(serviceCIDR)
	if err != nil || cidr.IP.To4() == nil {
		return ""
	}
	first := make(net.IP, 4)
	binary.BigEndian.PutUint32(first, binary.BigEndian.Uint32(cidr.IP.To4())+1)
	return first.String()
}

// KubeletClientCert issues the API server's client certificate for kubelets, signed by
// the cluster CA and valid for a year; it lives in memory only and is issued again at
// each start.
func (p *PKI) KubeletClientCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "wasmkube-apiserver-kubelet-client", Organization: []string{authz.MastersGroup}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
