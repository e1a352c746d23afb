package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/explorer/web/browsertest"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

const schedConfig = `
scheduler:
  wasmPlugins:
  - name: node-digit
    path: node-digit.wasm
    failurePolicy: Fail
  profiles:
  - schedulerName: default-scheduler
    plugins:
      filter:
        enabled: [{name: node-digit}]
      score:
        enabled: [{name: node-digit, weight: 10}]
`

type matrixRow struct {
	Node    string `json:"node"`
	Chosen  bool   `json:"chosen"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Raw     string `json:"raw"`
	Final   string `json:"final"`
}

// readMatrix is the pod page's node x plugin table as the browser shows it.
const readMatrix = `[...document.querySelectorAll("#matrix tbody tr")].map((tr) => {
  const f = tr.querySelector('td.filter[data-plugin="node-digit"]');
  const s = tr.querySelector('td.score[data-plugin="node-digit"]');
  const fin = tr.querySelector("td.final");
  return {node: tr.dataset.node, chosen: tr.classList.contains("chosen"),
    verdict: f ? f.dataset.verdict : "", reason: f ? f.title : "",
    raw: s && s.dataset.raw !== undefined ? s.dataset.raw : "", final: fin && fin.dataset.final !== undefined ? fin.dataset.final : ""};
})`

// The decision explorer on a real API server, a scheduler with a wasm Filter and Score
// over four hollow nodes, and a wasm admission policy: a pod's page lists every node
// with the plugin's verdict and score and highlights the chosen node; a refused request
// names the denying policy and its message; a pod scheduled on its second attempt gets
// the two compared; a swap of the plugin's module appears on an open pod page's timeline,
// live. Screenshots are kept (docs/explorer.md, "Tests").
func TestExplorerPageInBrowser(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admHost, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := admitwasm.New(ctx, admitwasm.Options{Host: admHost, Config: []byte(`
admission:
  policies:
  - name: default-resources
    path: ` + wasmbuild.Go(t, "wasm-examples/go/default-resources") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
  - name: require-team
    path: ` + wasmbuild.WAT(t, "wasm-examples/wat/require-team/require-team.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
`)})
	if err != nil {
		t.Fatal(err)
	}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(pol), apiservertest.WithLogger(quiet()))
	client := srv.Client

	ready := make(chan struct{})
	nodesDone := make(chan error, 1)
	go func() {
		nodesDone <- hollow.Run(ctx, srv.Config, hollow.Options{Count: 4, Ready: ready, Logger: quiet()})
	}()
	select {
	case <-ready:
	case err := <-nodesDone:
		t.Fatalf("hollow nodes: %v", err)
	}
	defer func() { cancel(); <-nodesDone }()

	dir := t.TempDir()
	module := filepath.Join(dir, "node-digit.wasm")
	install := func(wat string) {
		b, err := os.ReadFile(wasmbuild.WAT(t, "core/explorer/web/testdata/"+wat))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(module+".tmp", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(module+".tmp", module); err != nil {
			t.Fatal(err)
		}
	}
	install("node-digit-up.wat")
	cfgFile := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(cfgFile, []byte(schedConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	schedHost, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(ctx)
	s, err := scheduler.New(sctx, scheduler.Options{RESTConfig: srv.SchedulerConfig(t), ConfigFile: cfgFile,
		WasmLoader: schedwasm.NewLoader(schedHost).Load, Logger: quiet()})
	if err != nil {
		scancel()
		t.Fatal(err)
	}
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); _ = s.Run(sctx) }()
	defer func() { scancel(); <-schedDone }()

	// web: the wasm Score puts it on hollow-2 (hollow-3 is filtered out).
	createPod(t, client, "web", map[string]string{"team": "a"})
	if n := waitBound(t, client, "web"); n != "hollow-2" {
		t.Fatalf("web on %s, want hollow-2 (the wasm Score's highest passing node)", n)
	}

	b := browserFor(t, srv, srv.Config.BearerToken)
	b.Open(srv.URL + "/explorer/pods/default/web")
	b.WaitFor(`document.querySelectorAll("#matrix tbody tr").length === 4`, "the matrix of web's attempt with 4 nodes")
	rows := browsertest.MustEval[[]matrixRow](b, readMatrix)
	for _, r := range rows {
		digit := int(r.Node[len(r.Node)-1] - '0')
		switch {
		case digit == 3:
			if r.Verdict != "Unschedulable" || !strings.Contains(r.Reason, "closed for maintenance") || r.Raw != "" || r.Chosen {
				t.Errorf("row %+v: want node-digit's Unschedulable 'closed for maintenance' and no score", r)
			}
		default:
			if r.Verdict != "Pass" || r.Raw != fmt.Sprint(30*digit) {
				t.Errorf("row %+v: want Pass and node-digit's raw score %d", r, 30*digit)
			}
			if r.Chosen != (r.Node == "hollow-2") {
				t.Errorf("row %+v: chosen must be hollow-2 only", r)
			}
		}
	}
	if t.Failed() {
		t.Fatalf("matrix: %+v", rows)
	}
	if why := browsertest.MustEval[string](b, `document.querySelector("#why").textContent`); !strings.Contains(why, "hollow-2") {
		t.Errorf("the summary %q does not say the pod went to hollow-2", why)
	}
	if hm := browsertest.MustEval[[]string](b, `[...document.querySelectorAll("#heatmap .hm-node.chosen")].map((e) => e.textContent)`); len(hm) != 1 || hm[0] != "hollow-2" {
		t.Errorf("heat map: chosen columns %q, want hollow-2", hm)
	}
	// Sorting by the plugin's score column puts the highest score first.
	b.Click(`#matrix th.col-score[data-plugin="node-digit"] button`)
	if first := browsertest.MustEval[string](b, `document.querySelector("#matrix tbody tr").dataset.node`); first != "hollow-2" {
		t.Errorf("sorted by node-digit's score: %s first, want hollow-2", first)
	}
	b.Screenshot("pod-web")

	// web's create: default-resources' patch as before/after lines.
	b.Open(browsertest.MustEval[string](b, `[...document.querySelectorAll("a")].find((a) => a.textContent.startsWith("CREATE pods default/web")).href`))
	b.WaitFor(`document.querySelector('#chain li[data-policy="default-resources"] .patch-diff')`, "default-resources' patch on web's request page")
	if added := browsertest.MustEval[string](b, `[...document.querySelectorAll('#chain li[data-policy="default-resources"] .pl-add')].map((e) => e.textContent).join("\n")`); !strings.Contains(added, "/spec/containers/0/resources/requests") {
		t.Errorf("default-resources' patch shows %q, want the requests it added", added)
	}
	// the before column comes from the record's old values: the paths it added were not set
	if was := browsertest.MustEval[string](b, `[...document.querySelectorAll('#chain li[data-policy="default-resources"] .patch-col:first-child .pl')].map((e) => e.textContent).join("\n")`); !strings.Contains(was, "(not set)") || strings.Contains(was, "not recorded") {
		t.Errorf("default-resources' before column %q, want the old values (not set) from the record", was)
	}
	if v := browsertest.MustEval[string](b, `document.querySelector('#chain li[data-policy="default-resources"]').dataset.verdict`); v != "Mutated" {
		t.Errorf("default-resources' verdict %q, want Mutated", v)
	}
	b.Screenshot("request-web-mutated")

	// A refused request: the pod without the team label.
	_, err = client.CoreV1().Pods("default").Create(ctx, pod("rogue", nil), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "the label team is required") {
		t.Fatalf("rogue: %v, want require-team's refusal", err)
	}
	b.Open(srv.URL + "/explorer/")
	sel := `[...document.querySelectorAll('.timeline-table tr[data-type="AdmissionRequest"]')].find((tr) => tr.textContent.includes("rogue") && tr.textContent.includes("denied"))`
	b.WaitFor(sel, "rogue's refused request on the home timeline")
	b.Screenshot("home")
	// Follow the row's link (rows keep arriving on top, so a click could land on another).
	b.Open(browsertest.MustEval[string](b, sel+`.querySelector("td.summary a").href`))
	b.WaitFor(`document.querySelector("#denied-by")`, "the request page")
	if by := browsertest.MustEval[string](b, `document.querySelector("#denied-by").textContent`); by != "require-team" {
		t.Errorf("denied by %q, want require-team", by)
	}
	msg := browsertest.MustEval[string](b, `(document.querySelector('#chain li[data-policy="require-team"][data-verdict="Denied"] .msg') || {}).textContent || ""`)
	if !strings.Contains(msg, "the label team is required") {
		t.Errorf("require-team's entry shows %q, want its message", msg)
	}
	b.Screenshot("request-rogue")
	// The policy's page counts its decisions.
	b.Open(srv.URL + "/explorer/policies/require-team")
	b.WaitFor(`[...document.querySelectorAll("#counts tbody tr")].some((tr) => tr.textContent.includes("Denied"))`, "require-team's Denied count")
	b.Screenshot("policy-require-team")

	// Two attempts: unschedulable while no node has the label the pod selects, then bound
	// once hollow-1 gets it; the page compares them.
	p := pod("picky", map[string]string{"team": "a"})
	p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.Open(srv.URL + "/explorer/pods/default/picky")
	b.WaitFor(`document.querySelector('#timeline .ev[data-type="SchedulingAttempt"]')`, "picky's first attempt")
	n, err := client.CoreV1().Nodes().Get(ctx, "hollow-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels["disk"] = "ssd"
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if node := waitBound(t, client, "picky"); node != "hollow-1" {
		t.Fatalf("picky on %s, want hollow-1 (the only node with disk=ssd)", node)
	}
	b.WaitFor(`document.querySelector("#diff") && document.querySelector('#diff tr.changed[data-node="hollow-1"]')`, "the diff of picky's two attempts, hollow-1 changed")
	b.Screenshot("pod-picky-two-attempts")

	// A swap of the module appears on the open page's timeline, live; the next pod
	// follows the new Score.
	b.Open(srv.URL + "/explorer/pods/default/web")
	b.WaitFor(`document.querySelector("#matrix tr.chosen")`, "web's page again")
	install("node-digit-down.wat")
	b.WaitFor(`document.querySelector('#timeline .ev[data-type="Swap"]')`, "the swap on web's timeline")
	if txt := browsertest.MustEval[string](b, `document.querySelector('#timeline .ev[data-type="Swap"]').textContent`); !strings.Contains(txt, "node-digit") || !strings.Contains(txt, "Applied") {
		t.Errorf("swap entry %q does not say node-digit's module was swapped", txt)
	}
	b.Screenshot("pod-web-after-swap")
	createPod(t, client, "web-2", map[string]string{"team": "a"})
	if n := waitBound(t, client, "web-2"); n != "hollow-0" {
		t.Fatalf("web-2 on %s, want hollow-0 (the swapped Score)", n)
	}
	b.Open(srv.URL + "/explorer/pods/default/web-2")
	b.WaitFor(`document.querySelector("#matrix tr.chosen") && document.querySelector("#matrix tr.chosen").dataset.node === "hollow-0"`, "web-2's chosen node hollow-0")
	b.Screenshot("pod-web-2")

	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("page errors: %q", errs)
	}
}

func pod(name string, labels map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
}

func createPod(t *testing.T, c kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), pod(name, labels), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}

func waitBound(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	var node string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s not bound: %v", name, err)
	}
	return node
}
