package kubelet_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// A pod on the real kubelet reads its Secret as env, envFrom and a volume, and gets the
// kube-api-access volume (token, ca.crt, namespace); the token it reads is a credential
// of its service account while the pod exists, and not after.
func TestPodSecretsAndServiceAccountToken(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	c := srv.Client
	// The API server seeds the default account and kube-root-ca.crt in its own namespaces
	// (the controller manager, not running here, keeps them in every namespace).
	if _, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectl(t, srv, "create", "secret", "generic", "db", "--from-literal=password=s3cr3t-pw", "--from-literal=USER=alice")
	n := newNode(t, srv, "sec-node")

	const sa = "/var/run/secrets/kubernetes.io/serviceaccount"
	ctr := busybox("app", `echo "env=$DB_PASSWORD user=$USER"; echo "file=$(cat /etc/db/password)"; `+
		`echo "ns=$(cat `+sa+`/namespace)"; grep -c 'BEGIN CERTIFICATE' `+sa+`/ca.crt; echo "token=$(cat `+sa+`/token)"; sleep 3600`)
	ctr.Env = []v1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
	ctr.EnvFrom = []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "db"}}}}
	ctr.VolumeMounts = []v1.VolumeMount{{Name: "db", MountPath: "/etc/db", ReadOnly: true}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(0),
		Containers: []v1.Container{ctr},
		Volumes:    []v1.Volume{{Name: "db", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "db"}}}}}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, "default", "reader", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	logs := ""
	for i := 0; i < 300 && !strings.Contains(logs, "token="); i++ {
		out, _ := exec.Command("kubectl", "--kubeconfig", srv.KubeconfigPath, "logs", "reader").CombinedOutput()
		logs = string(out)
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{"env=s3cr3t-pw user=alice", "file=s3cr3t-pw", "ns=default", "\n1\n"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("pod output lacks %q:\n%s", want, logs)
		}
	}
	token := strings.TrimSpace(logs[strings.Index(logs, "token=")+len("token="):])
	who := func() (string, error) {
		out, err := exec.Command("kubectl", "--server", srv.URL, "--certificate-authority", filepath.Join(srv.DataDir, "pki", "ca.crt"),
			"--token", token, "--kubeconfig", os.DevNull, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").CombinedOutput()
		return string(out), err
	}
	if out, err := who(); err != nil || out != "system:serviceaccount:default:default" {
		t.Fatalf("the pod's token as a credential: %v %s", err, out)
	}
	if err := c.CoreV1().Pods("default").Delete(ctx, "reader", metav1.DeleteOptions{GracePeriodSeconds: int64p(0)}); err != nil {
		t.Fatal(err)
	}
	waitGone := time.Now().Add(90 * time.Second)
	for {
		if _, err := c.CoreV1().Pods("default").Get(ctx, "reader", metav1.GetOptions{}); err != nil {
			break
		}
		if time.Now().After(waitGone) {
			t.Fatal("pod not deleted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := who(); err == nil || !strings.Contains(out, "Unauthorized") {
		t.Fatalf("the token of a deleted pod still works: %v %s", err, out)
	}
}
