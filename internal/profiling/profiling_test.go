package profiling_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/internal/profiling"
)

// TestProfilingIsAuthorized: /debug/pprof/ is served by the API server and, through
// delegated authorization, by the scheduler's and controller manager's endpoints (get on
// the nonResourceURL) and the kubelet's (get on nodes/proxy of its node), each to a caller
// allowed it and to nobody else: a user without the permission gets 403, no token 401.
func TestProfilingIsAuthorized(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,1\nbob-token,bob,2\ncarol-token,carol,3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := apiservertest.Start(t, apiservertest.WithTokenAuthFile(tokens))
	ctx := context.Background()
	grant := func(user string, rule rbacv1.PolicyRule) {
		t.Helper()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "profiles-" + user}, Rules: []rbacv1.PolicyRule{rule}}
		if _, err := srv.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "profiles-" + user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		if _, err := srv.Client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grant("bob", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/debug/pprof/*"}})
	grant("carol", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes/proxy"}})

	apiClient, err := rest.HTTPClientFor(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: srv.API.CACertPEM()}})
	if err != nil {
		t.Fatal(err)
	}
	scheduler := httptest.NewServer(profiling.Delegated(srv.Client, profiling.NonResource, profiling.Handler()))
	defer scheduler.Close()
	kubelet := httptest.NewServer(profiling.Delegated(srv.Client, profiling.NodeProxy("n1"), profiling.Handler()))
	defer kubelet.Close()

	get := func(c *http.Client, url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The grants reach the authorizer through its informers: wait until both are in force.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		bob, _ := get(apiClient, srv.URL+"/debug/pprof/", "bob-token")
		carol, _ := get(http.DefaultClient, kubelet.URL+"/debug/pprof/", "carol-token")
		if bob == 200 && carol == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grants not in force after 30 s: bob %d, carol %d", bob, carol)
		}
	}
	for _, tc := range []struct {
		where string
		c     *http.Client
		url   string
		token string
		code  int
		body  string
	}{
		{"API server", apiClient, srv.URL + "/debug/pprof/", "alice-token", 403, `cannot get path \"/debug/pprof/\"`},
		{"API server", apiClient, srv.URL + "/debug/pprof/", "bob-token", 200, "goroutine"},
		{"API server", apiClient, srv.URL + "/debug/pprof/heap?debug=1", "bob-token", 200, "heap profile"},
		{"scheduler", http.DefaultClient, scheduler.URL + "/debug/pprof/", "", 401, "a bearer token is required"},
		{"scheduler", http.DefaultClient, scheduler.URL + "/debug/pprof/", "alice-token", 403, `cannot get path "/debug/pprof/"`},
		{"scheduler", http.DefaultClient, scheduler.URL + "/debug/pprof/", "bob-token", 200, "goroutine"},
		{"scheduler", http.DefaultClient, scheduler.URL + "/debug/pprof/goroutine?debug=1", "bob-token", 200, "goroutine profile"},
		{"kubelet", http.DefaultClient, kubelet.URL + "/debug/pprof/", "bob-token", 403, `cannot get resource "nodes/proxy"`},
		{"kubelet", http.DefaultClient, kubelet.URL + "/debug/pprof/", "carol-token", 200, "goroutine"},
		{"kubelet", http.DefaultClient, kubelet.URL + "/debug/pprof/", "nobody-token", 401, "Unauthorized"},
	} {
		code, body := get(tc.c, tc.url, tc.token)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s as %q: %d %.300q, want %d containing %q", tc.where, tc.url, tc.token, code, body, tc.code, tc.body)
		}
	}
}
