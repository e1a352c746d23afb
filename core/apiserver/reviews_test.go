package apiserver_test

import (
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// kubectl auth whoami / can-i / can-i --list use the self review APIs; a kubectl user
// checks them first when a request is refused.
func TestKubectlAuthReviews(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	nodeTok := srv.NodeConfig(t, "n1").BearerToken

	out := k.ok("auth", "whoami")
	if !strings.Contains(out, "system:masters") {
		t.Fatalf("admin whoami lacks system:masters:\n%s", out)
	}
	out = k.ok("--token", nodeTok, "auth", "whoami")
	if !strings.Contains(out, "system:node:n1") || !strings.Contains(out, "system:nodes") {
		t.Fatalf("node whoami:\n%s", out)
	}

	cases := []struct {
		name  string
		token string
		args  []string
		want  string // first word of kubectl's answer
	}{
		{"admin creates pods", "", []string{"create", "pods"}, "yes"},
		{"admin anything", "", []string{"*", "*"}, "yes"},
		{"admin a resource wasmkube does not serve", "", []string{"get", "secrets"}, "yes"},
		{"node lists services", nodeTok, []string{"list", "services"}, "yes"},
		{"node reads a pod that does not exist (its get then gets the 404)", nodeTok, []string{"get", "pods/p"}, "yes"},
		{"node lists all pods", nodeTok, []string{"list", "pods"}, "no"},
		{"node reads a config map no pod of its uses", nodeTok, []string{"get", "configmaps/c"}, "no"},
		{"node updates node status", nodeTok, []string{"update", "nodes", "--subresource=status"}, "yes"},
		{"node deletes namespaces", nodeTok, []string{"delete", "namespaces"}, "no"},
		{"node patches deployments", nodeTok, []string{"patch", "deployments.apps"}, "no"},
		{"node reads deployments", nodeTok, []string{"get", "deployments.apps"}, "no"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"auth", "can-i"}
			if c.token != "" {
				args = append([]string{"--token", c.token}, args...)
			}
			// can-i exits 1 for "no": only the answer matters here.
			out, _ := k.run(append(args, c.args...)...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if got := strings.Fields(lines[len(lines)-1]); len(got) == 0 || got[0] != c.want {
				t.Fatalf("can-i %v: got %q, want %s", c.args, out, c.want)
			}
		})
	}

	out = k.ok("auth", "can-i", "--list")
	if !strings.Contains(out, "*.*") {
		t.Fatalf("admin rules lack *.*:\n%s", out)
	}
	out = k.ok("--token", nodeTok, "auth", "can-i", "--list")
	rules := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(f[0], "[") && strings.Contains(l, "[") {
			rules[f[0]] = l[strings.LastIndex(l, "["):]
		}
	}
	for res, want := range map[string]string{
		"nodes":       "[create delete get list patch update watch]",
		"pods":        "[create delete]",
		"pods/status": "[patch update]",
		"services":    "[get list watch]",
	} {
		if rules[res] != want {
			t.Errorf("node rule for %s = %q, want %q\n%s", res, rules[res], want, out)
		}
	}
	if _, ok := rules["deployments.apps"]; ok {
		t.Errorf("node has rules for deployments: %q\n%s", rules["deployments.apps"], out)
	}
}

// A malformed label selector is reported once, in upstream's words.
func TestKubectlBadLabelSelector(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	out, err := k.run("get", "pods", "-l", "a in (")
	if err == nil || !strings.Contains(out, "BadRequest") || !strings.Contains(out, "unable to parse requirement: found ''") ||
		strings.Count(out, "unable to parse requirement") != 1 {
		t.Fatalf("bad selector: %v\n%s", err, out)
	}
}
