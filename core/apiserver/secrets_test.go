package apiserver_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/storage"
)

func rawSecret(t *testing.T, srv *apiservertest.Server, ns, name string) []byte {
	t.Helper()
	resp, err := srv.API.EtcdClient().Get(context.Background(), storage.Key("secrets", ns, name))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw read of secret %s/%s: %v (%d values)", ns, name, err, len(resp.Kvs))
	}
	return resp.Kvs[0].Value
}

func tlsPair(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "web.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"web.example"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certPath, keyPath
}

func TestKubectlSecrets(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)

	k.ok("create", "secret", "generic", "db", "--from-literal=password=hunter2-plain", "--from-literal=user=admin")
	out := k.ok("get", "secret", "db", "-o", "yaml")
	if !strings.Contains(out, "password: "+base64.StdEncoding.EncodeToString([]byte("hunter2-plain"))) || !strings.Contains(out, "type: Opaque") {
		t.Fatalf("get -o yaml:\n%s", out)
	}
	// Encrypted at rest: the etcd value is AES-GCM under the generated key, and neither
	// the value nor its base64 appears in it.
	raw := rawSecret(t, srv, "default", "db")
	if !bytes.HasPrefix(raw, []byte("k8s:enc:aesgcm:v1:key1:")) || bytes.Contains(raw, []byte("hunter2")) ||
		bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString([]byte("hunter2-plain")))) || bytes.Contains(raw, []byte(`"kind"`)) {
		t.Fatalf("secret stored readable in etcd: %q", raw)
	}
	if _, err := os.Stat(filepath.Join(srv.DataDir, "encryption-config.yaml")); err != nil {
		t.Fatalf("no generated encryption config: %v", err)
	}

	crt, key := tlsPair(t, t.TempDir())
	k.ok("create", "secret", "tls", "web-tls", "--cert", crt, "--key", key)
	k.ok("create", "secret", "docker-registry", "regcred", "--docker-server=registry.example:5000", "--docker-username=u", "--docker-password=p")
	out = k.ok("get", "secrets")
	if header(out) != "NAME TYPE DATA AGE" || !strings.Contains(out, "kubernetes.io/tls") || !strings.Contains(out, "kubernetes.io/dockerconfigjson") {
		t.Fatalf("get secrets:\n%s", out)
	}
	if out := k.ok("get", "secrets", "--field-selector", "type=kubernetes.io/tls", "-o", "name"); strings.TrimSpace(out) != "secret/web-tls" {
		t.Fatalf("field selector type: %q", out)
	}
	// Type validation names the field; the type may not change.
	bad := k.file("bad.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: bad}\ntype: kubernetes.io/tls\ndata: {tls.crt: Yw==}\n")
	if out, err := k.run("create", "-f", bad); err == nil || !strings.Contains(out, `data[tls.key]: Required value`) {
		t.Fatalf("tls secret without key: %v\n%s", err, out)
	}
	// stringData is merged into data (its keys win over data's) and never stored or
	// returned, as upstream; a tls Secret given as stringData validates on the merged keys.
	sd := k.file("sd.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: sd}\ndata: {user: b2xk, keep: a2VwdA==}\nstringData: {user: alice, password: pw-sd}\n")
	k.ok("apply", "-f", sd)
	got, err := srv.Client.CoreV1().Secrets("default").Get(context.Background(), "sd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.StringData) != 0 || string(got.Data["user"]) != "alice" || string(got.Data["password"]) != "pw-sd" || string(got.Data["keep"]) != "kept" {
		t.Fatalf("secret from stringData: data %q stringData %q", got.Data, got.StringData)
	}
	if out := k.ok("get", "secret", "sd", "--no-headers"); len(strings.Fields(out)) < 3 || strings.Fields(out)[2] != "3" {
		t.Fatalf("get secret sd: DATA column of %q, want 3", out)
	}
	crtPEM, _ := os.ReadFile(crt)
	keyPEM, _ := os.ReadFile(key)
	tlsSD := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls-sd"}, Type: corev1.SecretTypeTLS,
		StringData: map[string]string{"tls.crt": string(crtPEM), "tls.key": string(keyPEM)}}
	if _, err := srv.Client.CoreV1().Secrets("default").Create(context.Background(), tlsSD, metav1.CreateOptions{}); err != nil {
		t.Fatalf("tls secret as stringData: %v", err)
	}
	if out, err := k.run("patch", "secret", "db", "-p", `{"type":"kubernetes.io/tls"}`); err == nil || !strings.Contains(out, "type: Invalid value") || !strings.Contains(out, "field is immutable") {
		t.Fatalf("type change: %v\n%s", err, out)
	}
}

func TestKubectlServiceAccountTokens(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	ctx := context.Background()

	k.ok("create", "serviceaccount", "app")
	if out := k.ok("get", "sa", "app"); header(out) != "NAME SECRETS AGE" {
		t.Fatalf("get sa:\n%s", out)
	}
	tok := strings.TrimSpace(k.ok("create", "token", "app", "--duration=20m"))
	who := func(token string) (string, error) {
		out, err := exec.Command("kubectl", "--server", srv.URL, "--certificate-authority", filepath.Join(srv.DataDir, "pki", "ca.crt"),
			"--token", token, "--kubeconfig", os.DevNull, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}").CombinedOutput()
		return string(out), err
	}
	out, err := who(tok)
	if err != nil || !strings.HasPrefix(out, "system:serviceaccount:default:app ") ||
		!strings.Contains(out, `"system:serviceaccounts","system:serviceaccounts:default","system:authenticated"`) {
		t.Fatalf("whoami with the token: %v %s", err, out)
	}
	// The expiry asked for is the one given.
	tr, err := srv.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "app", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil || time.Until(tr.Status.ExpirationTimestamp.Time) < 59*time.Minute || time.Until(tr.Status.ExpirationTimestamp.Time) > 61*time.Minute {
		t.Fatalf("default expiry: %v %v", err, tr.Status.ExpirationTimestamp)
	}
	if out, err := k.run("create", "token", "app", "--duration=1m"); err == nil || !strings.Contains(out, "may not specify a duration less than 10 minutes") {
		t.Fatalf("short duration: %v %s", err, out)
	}
	if out, err := k.run("create", "token", "nobody"); err == nil || !strings.Contains(out, `serviceaccounts "nobody" not found`) {
		t.Fatalf("missing account: %v %s", err, out)
	}

	// Audiences: a token for vault is not a credential for the API server, but a
	// TokenReview asking about vault accepts it.
	vault := strings.TrimSpace(k.ok("create", "token", "app", "--audience=vault"))
	if out, err := who(vault); err == nil || !strings.Contains(out, "Unauthorized") {
		t.Fatalf("vault token accepted by the API: %v %s", err, out)
	}
	rev, err := srv.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: vault, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
	if err != nil || !rev.Status.Authenticated || rev.Status.User.Username != "system:serviceaccount:default:app" || len(rev.Status.Audiences) != 1 || rev.Status.Audiences[0] != "vault" {
		t.Fatalf("token review for vault: %v %+v", err, rev.Status)
	}
	rev, err = srv.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: vault}}, metav1.CreateOptions{})
	if err != nil || rev.Status.Authenticated || !strings.Contains(rev.Status.Error, "audience") {
		t.Fatalf("token review for the API's audience: %v %+v", err, rev.Status)
	}

	// A token bound to a pod is valid while the pod exists.
	k.ok("run", "worker", "--image=busybox", "--overrides", `{"spec":{"serviceAccountName":"app"}}`)
	pod, err := srv.Client.CoreV1().Pods("default").Get(ctx, "worker", metav1.GetOptions{})
	if err != nil || pod.Spec.ServiceAccountName != "app" {
		t.Fatalf("pod: %v %v", err, pod)
	}
	bound := strings.TrimSpace(k.ok("create", "token", "app", "--bound-object-kind=Pod", "--bound-object-name=worker"))
	if out, err := who(bound); err != nil || !strings.HasPrefix(out, "system:serviceaccount:default:app") {
		t.Fatalf("bound token while the pod exists: %v %s", err, out)
	}
	if err := srv.Client.CoreV1().Pods("default").Delete(ctx, "worker", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if out, err := who(bound); err == nil || !strings.Contains(out, "Unauthorized") {
		t.Fatalf("bound token after the pod is gone: %v %s", err, out)
	}
	// A recreated account does not accept the old account's tokens.
	k.ok("delete", "sa", "app")
	k.ok("create", "sa", "app")
	if out, err := who(tok); err == nil {
		t.Fatalf("token of a deleted account accepted: %s", out)
	}
}

func TestPodServiceAccountDefaults(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	f := false
	if _, err := srv.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: &f}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mk := func(name, sa string) *corev1.Pod {
		t.Helper()
		p, err := srv.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "a", Image: "busybox"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := mk("plain", "")
	if p.Spec.ServiceAccountName != "default" || p.Spec.DeprecatedServiceAccount != "default" {
		t.Fatalf("account not defaulted: %q %q", p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount)
	}
	v := p.Spec.Volumes[len(p.Spec.Volumes)-1]
	if !strings.HasPrefix(v.Name, "kube-api-access-") || v.Projected == nil || *v.Projected.DefaultMode != 0o644 ||
		p.Spec.Containers[0].VolumeMounts[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" {
		t.Fatalf("no API access volume: %+v", p.Spec)
	}
	if q := mk("quiet", "quiet"); len(q.Spec.Volumes) != 0 {
		t.Fatalf("automount false on the account: %+v", q.Spec.Volumes)
	}
	// As upstream, a pod naming an account that does not exist is refused.
	_, err := srv.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lost"},
		Spec: corev1.PodSpec{ServiceAccountName: "nobody", Containers: []corev1.Container{{Name: "a", Image: "busybox"}}}}, metav1.CreateOptions{})
	if want := `pods "lost" is forbidden: error looking up service account default/nobody: serviceaccount "nobody" not found`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("pod with a missing account: %v, want %s", err, want)
	}

	// Accounts are read through a cache kept from a watch (objreader.go): a change to an
	// account, and its deletion, reach the pods created after the watch delivered them.
	sa, err := srv.Client.CoreV1().ServiceAccounts("default").Get(ctx, "quiet", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := true
	sa.AutomountServiceAccountToken = &tr
	if _, err := srv.Client.CoreV1().ServiceAccounts("default").Update(ctx, sa, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := false
	for i := 0; i < 300 && !seen; i++ {
		seen = len(mk(fmt.Sprintf("loud-%d", i), "quiet").Spec.Volumes) == 1
		if !seen {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !seen {
		t.Fatal("pods created after the account allowed automount still get no API access volume")
	}
	if err := srv.Client.CoreV1().ServiceAccounts("default").Delete(ctx, "quiet", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := false
	for i := 0; i < 300 && !refused; i++ {
		_, err := srv.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("after-%d", i)},
			Spec: corev1.PodSpec{ServiceAccountName: "quiet", Containers: []corev1.Container{{Name: "a", Image: "busybox"}}}}, metav1.CreateOptions{})
		refused = apierrors.IsForbidden(err)
		if err != nil && !refused {
			t.Fatal(err)
		}
		if !refused {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !refused {
		t.Fatal("pods naming a deleted account are still admitted")
	}
}
