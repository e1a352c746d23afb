package apiserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// basicAuthRegistry is go-containerregistry's registry on loopback behind HTTP basic auth
// (user puller): every request without the credentials gets a 401 with the challenge, as
// a private registry answers.
func basicAuthRegistry(t *testing.T) string {
	t.Helper()
	h, err := wasmoci.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "puller" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="wasmkube-test"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// dockerConfig is a kubernetes.io/dockerconfigjson document for addr.
func dockerConfig(t *testing.T, addr, user, pass string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"auths": map[string]any{addr: map[string]string{
		"username": user, "password": pass, "auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKubeletPullsPolicyFromPrivateRegistry: a kubelet probe WasmPolicy whose module is in
// a registry that requires basic auth, with the credentials in a Secret named by
// imagePullSecrets, loads on the node its nodeSelector matches: that kubelet, with its own
// node credential, reads the Secret (the node authorizer's WasmPolicy edge), pulls, and
// reports Active. A node the selector does not match may not get the Secret (403 naming
// the policy), nor may the matching node get a Secret the policy does not name.
func TestKubeletPullsPolicyFromPrivateRegistry(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	addr := basicAuthRegistry(t)
	creds := dockerConfig(t, addr, "puller", "s3cret")

	wasm, err := os.ReadFile(wasmbuild.WAT(t, "plugins/wasmpolicy/testdata/say-no.wat"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wasmoci.Push(ctx, wasm, addr+"/policies/say-no:v1", wasmoci.PushOptions{}); err == nil {
		t.Fatal("the registry took an anonymous push: it must require credentials")
	}
	kc, err := wasmoci.KeychainFromDockerConfig(creds)
	if err != nil {
		t.Fatal(err)
	}
	// By digest: a tag would wait for the wasmpolicy controller (not run here) to resolve it.
	ref, err := wasmoci.Push(ctx, wasm, addr+"/policies/say-no:v1", wasmoci.PushOptions{Keychain: kc})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wasm-pull"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"regcred", "other"} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "wasm-pull"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: creds}}
		if _, err := srv.Client.CoreV1().Secrets("wasm-pull").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for node, zone := range map[string]string{"n1": "a", "n2": "b"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"zone": zone}}}
		if _, err := srv.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	admin := dynamic.NewForConfigOrDie(srv.Config)
	pol := policyObject(t, "say-no", policyv1alpha1.WasmPolicySpec{
		Hook: policyv1alpha1.HookKubeletProbe,
		Module: policyv1alpha1.ModuleSource{Image: ref.String(),
			ImagePullSecrets: []corev1.SecretReference{{Namespace: "wasm-pull", Name: "regcred"}}},
		Kubelet: &policyv1alpha1.KubeletHook{HookName: "say-no", NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}},
	})
	if _, err := admin.Resource(wasmPolicies).Create(ctx, pol, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// n1's kubelet: its loader and report sink with its own node credential, as
	// cmd/wasmkube's runHookPolicies starts them.
	n1 := srv.NodeConfig(t, "n1")
	n1Dyn := dynamic.NewForConfigOrDie(n1)
	n1Client := kubernetes.NewForConfigOrDie(n1)
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	hooks := nodewasm.New(host, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(hooks.Close)
	sink, err := report.New(report.Options{Client: n1Dyn, Component: wasmpolicy.ComponentKubelet, Instance: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	lctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go sink.Run(lctx)
	loader, err := wasmpolicy.New(wasmpolicy.Config{Component: wasmpolicy.ComponentKubelet, Name: "n1", Dynamic: n1Dyn, Client: n1Client,
		Target: hooks, Cache: wasmoci.Options{Dir: t.TempDir()}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	go loader.Run(lctx)

	reports := admin.Resource(policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicyreports"))
	var last policyv1alpha1.ComponentStatus
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		u, err := reports.Get(ctx, report.Name("say-no", wasmpolicy.ComponentKubelet, "n1"), metav1.GetOptions{})
		if err == nil {
			var r policyv1alpha1.WasmPolicyReport
			if cerr := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); cerr != nil {
				t.Fatal(cerr)
			}
			if last = r.Status; last.Phase == policyv1alpha1.PhaseActive {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 never reported say-no Active; last report %+v (err %v)", last, err)
		}
	}
	if got := hooks.Plugins(); len(got) != 1 || got[0] != "say-no" {
		t.Fatalf("n1's hook plugins: %v", got)
	}

	if _, err := n1Client.CoreV1().Secrets("wasm-pull").Get(ctx, "regcred", metav1.GetOptions{}); err != nil {
		t.Fatalf("n1 reading the Secret its policy names: %v", err)
	}
	_, err = n1Client.CoreV1().Secrets("wasm-pull").Get(ctx, "other", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `no relationship found between node "n1" and this object`) {
		t.Fatalf("n1 reading a Secret no policy names: %v", err)
	}
	n2Client := kubernetes.NewForConfigOrDie(srv.NodeConfig(t, "n2"))
	_, err = n2Client.CoreV1().Secrets("wasm-pull").Get(ctx, "regcred", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `WasmPolicy "say-no" names this Secret in spec.module.imagePullSecrets, but its spec.kubelet.nodeSelector (zone=a) does not select node "n2"`) {
		t.Fatalf("n2 (not selected) reading the policy's Secret: %v", err)
	}
}
