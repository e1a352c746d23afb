package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// server.tokenAuthFile: flag > env > config file, as every server key; up reads the same
// key; a missing file is an error naming the key.
func TestTokenAuthFileSetting(t *testing.T) {
	dir := t.TempDir()
	tokens := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("t1,alice,1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fromFile, fromEnv, fromFlag := tokens("file.csv"), tokens("env.csv"), tokens("flag.csv")
	cfg := writeConfig(t, "server:\n  dataDir: /d\n  tokenAuthFile: "+fromFile+"\n")
	cases := []struct {
		name, env string
		args      []string
		want      string
		wantErr   string
	}{
		{name: "none", args: []string{"--data-dir", "/d"}, want: ""},
		{name: "file", args: []string{"--config", cfg}, want: fromFile},
		{name: "env over file", env: fromEnv, args: []string{"--config", cfg}, want: fromEnv},
		{name: "flag over env", env: fromEnv, args: []string{"--config", cfg, "--token-auth-file", fromFlag}, want: fromFlag},
		{name: "missing file", args: []string{"--data-dir", "/d", "--token-auth-file", filepath.Join(dir, "nope.csv")}, wantErr: "server.tokenAuthFile (--token-auth-file)"},
		{name: "a directory", args: []string{"--data-dir", "/d", "--token-auth-file", dir}, wantErr: "is not a regular file"},
		{name: "typo in the key", args: []string{"--config", writeConfig(t, "server:\n  dataDir: /d\n  tokenAuthFlie: x\n")}, wantErr: "server.tokenAuthFlie: unknown key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("WASMKUBE_TOKEN_AUTH_FILE", c.env)
			if c.env == "" {
				os.Unsetenv("WASMKUBE_TOKEN_AUTH_FILE")
			}
			cmd := newServerCmd()
			if err := cmd.Flags().Parse(c.args); err != nil {
				t.Fatal(err)
			}
			opts, _, err := serverOptions(cmd)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.TokenAuthFile != c.want {
				t.Fatalf("TokenAuthFile = %q, want %q", opts.TokenAuthFile, c.want)
			}
		})
	}

	os.Unsetenv("WASMKUBE_TOKEN_AUTH_FILE")
	for _, c := range []struct {
		name string
		o    upOptions
		want string
	}{
		{"up: none", upOptions{}, ""},
		{"up: config file", upOptions{configFile: cfg}, fromFile},
		{"up: flag over file", upOptions{configFile: cfg, tokenFile: fromFlag}, fromFlag},
	} {
		got, err := upTokenAuthFile(c.o)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if _, err := upTokenAuthFile(upOptions{tokenFile: "relative-missing.csv"}); err == nil || !strings.Contains(err.Error(), "server.tokenAuthFile") {
		t.Errorf("up with a missing file: %v", err)
	}
}

// `wasmkube server --token-auth-file F` accepts F's users, and its in-process controller
// manager and scheduler, which act as system:kube-controller-manager and
// system:kube-scheduler under RBAC, still do their work: a Deployment gets its
// ReplicaSet and pods, and both Leases get a holder.
func TestServerCommandTokenAuthFileAndComponentIdentities(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,1001,\"devs,team-a\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stop, admin := runServerCmd(t, dir, "--token-auth-file", tokens, "--metrics-addr", "")
	defer func() { _ = stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	alice := rest.AnonymousClientConfig(cfg)
	alice.BearerToken = "alice-token"
	ac, err := kubernetes.NewForConfig(alice)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ac.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami with the static token: %v", err)
	}
	// (The uid column is read but not carried: wasmkube's users have no uid yet.)
	if u := r.Status.UserInfo; u.Username != "alice" || !strings.Contains(strings.Join(u.Groups, ","), "team-a") {
		t.Fatalf("whoami: %+v", u)
	}
	if _, err := ac.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("alice, bound to nothing, listed secrets")
	}

	one := int32(2)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := admin.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods int
	for ctx.Err() == nil {
		l, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err == nil && len(l.Items) == 2 {
			pods = 2
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if pods != 2 {
		t.Fatal("the in-process controller manager made no pods for the Deployment")
	}
	for _, name := range controlPlaneLeases {
		var holder string
		for ctx.Err() == nil {
			l, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
				holder = *l.Spec.HolderIdentity
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if holder == "" {
			t.Fatalf("Lease %s has no holder", name)
		}
	}
	// Their events are written as the components themselves.
	var evUsers string
	for ctx.Err() == nil && evUsers == "" {
		l, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, e := range l.Items {
				if e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == "web" {
					evUsers = e.Source.Component + e.ReportingController
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if evUsers == "" {
		t.Fatal("no event for the Deployment: the controller manager cannot write events?")
	}
}
