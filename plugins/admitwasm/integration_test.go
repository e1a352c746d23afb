package admitwasm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const podRule = `rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE, UPDATE]}]`

// The example behaviours through the real API server and real kubectl: a denial with
// the policy's message and nothing stored, the same under --dry-run=server, a policy's
// own warning, Warn and Audit as ValidatingAdmissionPolicy's, mutations in config order,
// a 422 naming the field, and the API server's validation of the mutated object.
func TestKubectl(t *testing.T) {
	c := startCluster(t, `
admission:
  policies:
  - name: add-annotation
    path: @add-annotation@
    `+podRule+`
    objectSelector: {matchLabels: {mutate: "yes"}}
  - name: second-mutator
    path: @second-mutator@
    `+podRule+`
    objectSelector: {matchLabels: {mutate: "yes"}}
  - name: require-team
    path: @require-team@
    `+podRule+`
    namespaceSelector: {matchLabels: {wasmkube.io/require-team: "true"}}
  - name: warn-team
    path: @require-team@
    `+podRule+`
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: warned}}
    validationActions: [Warn]
  - name: audit-team
    path: @require-team@
    `+podRule+`
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: audited}}
    validationActions: [Audit]
  - name: misbehave
    path: @misbehave@
    `+podRule+`
    objectSelector: {matchExpressions: [{key: misbehave, operator: Exists}]}
`)
	run := func(args ...string) string {
		t.Helper()
		out, err := c.kubectl(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	fails := func(args ...string) string {
		t.Helper()
		out, err := c.kubectl(args...)
		if err == nil {
			t.Fatalf("kubectl %s succeeded:\n%s", strings.Join(args, " "), out)
		}
		return out
	}
	run("create", "namespace", "teams")
	run("label", "namespace", "teams", "wasmkube.io/require-team=true")
	run("create", "namespace", "warned")
	run("create", "namespace", "audited")

	const denied = `admission policy require-team denied the request: pods "web" must carry label team`
	if out := fails("-n", "teams", "run", "web", "--image=busybox"); !strings.Contains(out, "Error from server (Forbidden)") || !strings.Contains(out, denied) {
		t.Fatalf("denial: %s", out)
	}
	if out := fails("-n", "teams", "get", "pod", "web"); !strings.Contains(out, "NotFound") {
		t.Fatalf("a denied pod was stored: %s", out)
	}
	if out := fails("-n", "teams", "run", "web", "--image=busybox", "--dry-run=server"); !strings.Contains(out, denied) {
		t.Fatalf("dry-run denial: %s", out)
	}
	if out := run("-n", "teams", "run", "web", "--image=busybox", "--labels=team=a", "--dry-run=server"); !strings.Contains(out, "pod/web created (server dry run)") {
		t.Fatalf("dry-run admission: %s", out)
	}
	if out := fails("-n", "teams", "get", "pod", "web"); !strings.Contains(out, "NotFound") {
		t.Fatalf("a dry run stored the pod: %s", out)
	}
	// warning() reaches the client.
	if out := run("-n", "teams", "run", "web", "--image=busybox", "--labels=team=a,warn-me=1"); !strings.Contains(out, "Warning: require-team saw web") || !strings.Contains(out, "pod/web created") {
		t.Fatalf("policy warning: %s", out)
	}
	// ... and reaches it with a denial too.
	if out := fails("-n", "teams", "run", "web2", "--image=busybox", "--labels=warn-me=1"); !strings.Contains(out, "Warning: require-team saw web2") ||
		!strings.Contains(out, `admission policy require-team denied the request: pods "web2" must carry label team`) {
		t.Fatalf("policy warning of a denied request: %s", out)
	}
	// Other namespaces do not match require-team's namespace selector.
	run("run", "free", "--image=busybox")

	// Warn: admitted with the denial as a warning; Audit: admitted silently, recorded.
	if out := run("-n", "warned", "run", "w", "--image=busybox"); !strings.Contains(out, `Warning: admission policy warn-team: pods "w" must carry label team`) || !strings.Contains(out, "pod/w created") {
		t.Fatalf("Warn: %s", out)
	}
	if out := run("-n", "audited", "run", "a", "--image=busybox"); strings.Contains(out, "Warning") || !strings.Contains(out, "pod/a created") {
		t.Fatalf("Audit: %s", out)
	}
	c.event("audited", "PolicyViolation", `admission policy audit-team (audit): pods "a" must carry label team`)
	if !strings.Contains(c.logs.String(), "admission policy violation (audit)") {
		t.Fatal("no audit log line")
	}
	for _, m := range []struct {
		policy, action string
		want           float64
	}{{"require-team", "Deny", 3}, {"warn-team", "Warn", 1}, {"audit-team", "Audit", 1}} {
		if got := c.metric("wasmkube_admission_policy_rejections_total", map[string]string{"policy": m.policy, "action": m.action}); got != m.want {
			t.Errorf("rejections of %s (%s): %v, want %v", m.policy, m.action, got, m.want)
		}
	}
	if n := c.metric("wasmkube_admission_policy_duration_seconds", map[string]string{"policy": "require-team", "operation": "CREATE", "rejected": "true"}); n != 3 {
		t.Errorf("duration samples of rejected require-team calls: %v", n)
	}

	// Mutations run in config order, each on the previous one's result.
	run("run", "m", "--image=busybox", "--labels=mutate=yes")
	if out := run("get", "pod", "m", "-o", "jsonpath={.metadata.annotations.mutated-by} {.metadata.annotations.seen-by-second}"); out != "add-annotation yes" {
		t.Fatalf("mutations: %q", out)
	}
	// A reason starting with a field path is 422 naming it.
	if out := fails("run", "f", "--image=busybox", "--labels=misbehave=d"); !strings.Contains(out,
		`The Pod "f" is invalid: spec.containers[0].image: admission policy misbehave denied the request: must carry a digest`) {
		t.Fatalf("field denial: %s", out)
	}
	// The API server's own validation sees the mutated object.
	if out := fails("run", "i", "--image=busybox", "--labels=misbehave=i"); !strings.Contains(out, "spec.containers[0].image: Required value") {
		t.Fatalf("validation of the mutated pod: %s", out)
	}
	if out := fails("get", "pod", "i"); !strings.Contains(out, "NotFound") {
		t.Fatalf("an invalid mutated pod was stored: %s", out)
	}
}

// Misbehaving modules are contained under both failure policies: Fail refuses with 500
// naming the policy and the failure, Ignore admits as if the policy allowed; no request
// outlives the policy's time limit by much, nothing is stored on a refusal, and the
// server keeps serving.
func TestMisbehavingPolicies(t *testing.T) {
	c := startCluster(t, `
admission:
  policies:
  - name: fail-policy
    path: @misbehave@
    `+podRule+`
    objectSelector: {matchLabels: {policy: fail}}
    timeout: 300ms
    pool: 2
  - name: ignore-policy
    path: @misbehave@
    failurePolicy: Ignore
    `+podRule+`
    objectSelector: {matchLabels: {policy: ignore}}
    timeout: 300ms
    pool: 2
  - name: bomb-fail
    path: @misbehave@
    `+podRule+`
    objectSelector: {matchLabels: {policy: bomb-fail}}
  - name: bomb-ignore
    path: @misbehave@
    failurePolicy: Ignore
    `+podRule+`
    objectSelector: {matchLabels: {policy: bomb-ignore}}
`)
	ctx := context.Background()
	var warnings []string
	client := c.client(&warnings)
	// Memory bombs, under the default time limit (10s): a grow beyond the memory limit
	// ends the call at once, reported as a memory limit, not held until the time limit,
	// whether the guest aborts on the refusal (grow) or keeps asking (memorybomb).
	for _, how := range []string{"grow", "memorybomb"} {
		name := how + "-bomb-fail"
		_, err := client.CoreV1().Pods("default").Create(ctx, pod(name, map[string]string{"misbehave": how, "policy": "bomb-fail"}), metav1.CreateOptions{})
		var se *apierrors.StatusError
		const want = "admission policy bomb-fail failed: memory limit: instance reached its memory limit of 67108864 bytes"
		if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusInternalServerError || !strings.Contains(se.ErrStatus.Message, want) {
			t.Errorf("%s: got %v, want 500 with %q", name, err, want)
		}
		name = how + "-bomb-ignore"
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod(name, map[string]string{"misbehave": how, "policy": "bomb-ignore"}), metav1.CreateOptions{}); err != nil {
			t.Errorf("%s: Ignore refused: %v", name, err)
		}
	}
	if got := c.metric("wasmkube_plugin_failures_total", map[string]string{"plugin": "bomb-ignore", "kind": "validate"}); got != 2 {
		t.Errorf("failures of bomb-ignore's validate: %v, want 2", got)
	}
	for _, tc := range []struct{ how, reason string }{
		{"loop", "timeout: call exceeded its time limit of 300ms"},
		{"trap", "trap: "},
		{"badptr", "bad pointer: host function warning"},
		{"code", "garbage result: entry point wasmkube_validate returned status code 7"},
		{"error", "plugin error: policy error"},
		{"patch", `garbage result: set_patch: the patch changes metadata.name from "patch-fail" to "renamed"`},
		{"notpatch", "garbage result: set_patch: the patch is not a JSON array"},
		{"apply", "garbage result: set_patch: the patch does not apply"},
	} {
		for _, policy := range []string{"fail", "ignore"} {
			name := tc.how + "-" + policy
			start := time.Now()
			_, err := client.CoreV1().Pods("default").Create(ctx, pod(name, map[string]string{"misbehave": tc.how, "policy": policy}), metav1.CreateOptions{})
			if d := time.Since(start); d > 5*time.Second && !raceEnabled {
				t.Errorf("%s: the request took %s", name, d)
			}
			if policy == "ignore" {
				if err != nil {
					t.Errorf("%s: Ignore refused: %v", name, err)
					continue
				}
				got, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil || got.Name != name {
					t.Errorf("%s: the admitted pod: %v", name, err)
				}
				continue
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusInternalServerError || !containsOne(se.ErrStatus.Message, "admission policy fail-policy failed: ", tc.reason) {
				t.Errorf("%s: got %v, want 500 with %q", name, err, tc.reason)
			}
			if _, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s: refused pod stored (%v)", name, err)
			}
		}
	}
	// A 10 MB warning is cut to 1 KiB and the pod admitted, under either policy.
	warnings = nil
	// (Under the default time limit: filling and cutting 10 MB is no test of the limit,
	// and at a high load it can take longer than fail-policy's 300ms.)
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("warn-fail", map[string]string{"misbehave": "warn10mb", "policy": "bomb-fail"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || len(warnings[0]) != 1024 || strings.Trim(warnings[0], "W") != "" {
		t.Fatalf("warnings of a 10 MB warning: %d, first of %d bytes", len(warnings), len(warnings[0]))
	}
	if got := c.metric("wasmkube_plugin_failures_total", map[string]string{"plugin": "fail-policy", "kind": "validate"}); got < 5 {
		t.Errorf("failures of fail-policy's validate: %v", got)
	}
	if got := c.metric("wasmkube_plugin_failures_total", map[string]string{"plugin": "ignore-policy", "kind": "mutate"}); got != 3 {
		t.Errorf("failures of ignore-policy's mutate: %v", got)
	}
	if _, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the server after the misbehaving policies: %v", err)
	}
}

// A client keeps creating pods while the config is edited: a policy added, a broken
// module (the last good set stays in force and the failure is reported), a policy
// dropped. No request fails, and every pod is admitted by one whole set: a pod created
// after a swap is in force carries the new set's mutation.
func TestLiveSwap(t *testing.T) {
	cfg1 := `
admission:
  policies:
  - name: require-team
    path: @require-team@
    ` + podRule + `
`
	cfg2 := cfg1 + `  - name: add-annotation
    path: @add-annotation@
    ` + podRule + `
`
	cfg3 := cfg2 + `  - name: broken
    path: @broken@
    ` + podRule + `
`
	cfg4 := `
admission:
  policies:
  - name: add-annotation
    path: @add-annotation@
    ` + podRule + `
`
	c := startCluster(t, cfg1)
	ctx := context.Background()
	client := c.srv.Client

	var created, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := client.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("load-%d-%d", w, i), map[string]string{"team": "a"}), metav1.CreateOptions{})
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				created.Add(1)
			}
		}()
	}
	annotated := func(name string) bool {
		p, err := client.CoreV1().Pods("default").Create(ctx, pod(name, map[string]string{"team": "a"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("probe pod %s: %v", name, err)
		}
		return p.Annotations["mutated-by"] == "add-annotation"
	}
	probe := 0
	next := func() string { probe++; return fmt.Sprintf("probe-%d", probe) }
	if annotated(next()) {
		t.Fatal("annotated before add-annotation was configured")
	}

	written := time.Now()
	c.write(cfg2)
	eventually(t, "add-annotation in force", func() bool { return annotated(next()) })
	t.Logf("add-annotation in force %s after the config was written", time.Since(written))
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod(next(), nil), metav1.CreateOptions{}); err == nil {
		t.Fatal("require-team stopped denying after the swap")
	}

	failures := c.metric("wasmkube_admission_config_reloads_total", map[string]string{"result": "failure"})
	c.write(cfg3)
	eventually(t, "the broken module's reload failure", func() bool {
		return c.metric("wasmkube_admission_config_reloads_total", map[string]string{"result": "failure"}) > failures
	})
	c.event("kube-system", "FailedAdmissionConfigReload", `admission.policies[2]: plugin broken:`)
	if got := c.pol.InForce(); strings.Join(got, ",") != "require-team,add-annotation" {
		t.Fatalf("in force after a broken module: %v", got)
	}
	if !annotated(next()) {
		t.Fatal("the last good set is not in force")
	}

	c.write(cfg4)
	eventually(t, "require-team dropped", func() bool {
		_, err := client.CoreV1().Pods("default").Create(ctx, pod(next(), nil), metav1.CreateOptions{})
		return err == nil
	})
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d pod creates failed across the swaps, first: %v", failed.Load(), failed.Load()+created.Load(), firstErr.Load())
	}
	if created.Load() == 0 {
		t.Fatal("the load created no pod")
	}
	t.Logf("%d pods created across three swaps", created.Load())
}

// A context-aware policy reads only what its config grants, in the request's
// namespace, from the watch cache; one that imports the functions without a grant does
// not load, naming the capability.
func TestContextAwarePolicy(t *testing.T) {
	c := startCluster(t, `
admission:
  policies:
  - name: needs-allow
    path: @context@
    `+podRule+`
    namespaceSelector: {matchLabels: {ctx: "yes"}}
    capabilities: [configmaps]
  - name: not-granted
    path: @context@
    `+podRule+`
    namespaceSelector: {matchLabels: {ctx: "nogrant"}}
    capabilities: [namespaces]
`)
	ctx := context.Background()
	client := c.srv.Client
	c.namespace("ctx-a", map[string]string{"ctx": "yes"})
	c.namespace("ctx-b", map[string]string{"ctx": "yes"})
	c.namespace("ctx-c", map[string]string{"ctx": "nogrant"})
	_, err := client.CoreV1().Pods("ctx-a").Create(ctx, pod("p", nil), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "admission policy needs-allow denied the request: configmap allow is missing in the namespace") {
		t.Fatalf("without the configmap: %v", err)
	}
	if _, err := client.CoreV1().ConfigMaps("ctx-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "allow"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	wc := c.client(&warnings)
	eventually(t, "the configmap in the watch cache", func() bool {
		_, err := wc.CoreV1().Pods("ctx-a").Create(ctx, pod(ctxProbe(), nil), metav1.CreateOptions{})
		return err == nil
	})
	if len(warnings) == 0 || warnings[len(warnings)-1] != "listed" {
		t.Fatalf("list_objects: warnings %q", warnings)
	}
	// The configmap of ctx-a does not count in ctx-b.
	if _, err := client.CoreV1().Pods("ctx-b").Create(ctx, pod("p", nil), metav1.CreateOptions{}); err == nil {
		t.Fatal("a policy read another namespace's configmap")
	}
	// A grant of namespaces does not give configmaps.
	if _, err := client.CoreV1().Pods("ctx-c").Create(ctx, pod("p", nil), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "configmaps not granted") {
		t.Fatalf("read without the grant: %v", err)
	}

	// Without capabilities the module does not load; the set in force stays.
	c.write(`
admission:
  policies:
  - name: no-grant
    path: @context@
    ` + podRule + `
`)
	c.event("kube-system", "FailedAdmissionConfigReload", "imports wasmkube.get_object, which needs capability")
	if got := c.pol.InForce(); strings.Join(got, ",") != "needs-allow,not-granted" {
		t.Fatalf("in force: %v", got)
	}
}

// containsOne reports whether s contains prefix followed by one of the |-separated texts.
func containsOne(s, prefix, texts string) bool {
	for _, t := range strings.Split(texts, "|") {
		if strings.Contains(s, prefix+t) {
			return true
		}
	}
	return false
}

var probes atomic.Int64

func ctxProbe() string { return fmt.Sprintf("ctx-probe-%d", probes.Add(1)) }
