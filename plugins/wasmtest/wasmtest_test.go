package wasmtest_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

func open(t *testing.T, path string) *wasmtest.Plugin {
	t.Helper()
	// 1 s per call instead of 100 ms: the tests are about answers and memory, and the
	// test machine may be loaded.
	p, err := wasmtest.Open(context.Background(), path, wasmtest.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// Correct plugins pass every check (a skip says why a check does not apply).
func TestConformancePassesCorrectPlugins(t *testing.T) {
	for _, tt := range []struct{ src, args string }{
		{"go:wasm-examples/go/zone-filter", `{"zones": ["zone-a"]}`},
		{"go:wasm-examples/go/pack-score", ""},
		{"go:wasm-examples/go/spread-score", ""},
		{"go:wasm-examples/go/node-resources-fit", ""},
		{"wat:wasm-examples/wat/drain-filter/drain-filter.wat", ""},
		{"wat:wasm-examples/wat/pool-filter/pool-filter.wat", ""},
		{"wat:wasm-examples/wat/coscheduling-permit/coscheduling-permit.wat", ""},
		{"wat:wasm-examples/wat/binding-limit-reserve/binding-limit-reserve.wat", ""},
	} {
		t.Run(tt.src, func(t *testing.T) {
			rs := open(t, build(t, tt.src)).Conformance(context.Background(), wasmtest.ConformanceOptions{Args: []byte(tt.args)})
			if wasmtest.Failed(rs) > 0 {
				var out bytes.Buffer
				wasmtest.WriteText(&out, rs)
				t.Errorf("a correct plugin failed conformance:\n%s", out.String())
			}
		})
	}
}

// Each subtly wrong plugin fails the one check that names its defect.
func TestConformanceNamesTheDefect(t *testing.T) {
	for _, tt := range []struct{ src, args, check, want string }{
		{"go:plugins/wasmtest/testdata/globalstate", "", "same answers on every instance", "cycle state, not globals"},
		{"go:plugins/wasmtest/testdata/batchorder", "", "answers do not depend on batch splits or node order", "scores depend on the batch: normalise in NormalizeScore, not in Score"},
		{"go:plugins/wasmtest/testdata/outofrange", "", "answers every fixture pod without a failure", "score 150 for node"},
		{"go:plugins/wasmtest/testdata/leak", "", "memory stays bounded", "a leak: memory grew from"},
		{"go:plugins/wasmtest/testdata/lenientargs", `{"label": "disk"}`, "init refuses bad args with a reason", "wasmkube_init accepted them"},
		{"go:plugins/wasmtest/testdata/rememberpod", "", "no state carried from one pod's cycle to the next", "answered differently after pod large"},
		{"wat:plugins/wasmtest/testdata/ignorecap.wat", "", "long, unicode and unrelated data", "n > cap must be retried"},
		{"wat:plugins/wasmtest/testdata/ignorecapstatic.wat", "", "long, unicode and unrelated data", "n > cap must be retried"},
		{"wat:plugins/wasmtest/testdata/sidecar.wat", "", "admission: a mutate re-invoked on its own output changes nothing", "changed /spec/containers/2 (added"},
		{"wat:plugins/wasmtest/testdata/sidecar.wat", "", "admission: a mutate leaves an object that already carries its patch unchanged", "/spec/containers/2 (added"},
		{"wat:plugins/wasmtest/testdata/countdeny.wat", "", "admission: a validate's verdict does not depend on call count", "call 3 of the same request on the same instance denied"},
		{"wat:plugins/wasmtest/testdata/binding-defects.wat", "", "Unreserve undoes exactly what Reserve did", "Unreserve must undo exactly what Reserve did"},
		{"wat:plugins/wasmtest/testdata/binding-defects.wat", "", "Permit waits are bounded", "over the bound of 5m0s"},
		{"wat:plugins/wasmtest/testdata/binding-defects.wat", "", "Permit waits are bounded", "no Permit call allowed any"},
		{"wat:plugins/wasmtest/testdata/binding-defects.wat", "", "hints queue every event that helps", "the hint says Skip for Node Add"},
		{"wat:plugins/wasmtest/testdata/signtoolittle.wat", "", "pods with equal signatures get equal answers", "have equal signatures"},
	} {
		t.Run(tt.src, func(t *testing.T) {
			calls := 2000
			if strings.HasPrefix(tt.check, "memory stays bounded") {
				calls = 0 // the default 10,000: a leak of 256 bytes a call needs them to exceed the slack
			}
			rs := open(t, build(t, tt.src)).Conformance(context.Background(), wasmtest.ConformanceOptions{Args: []byte(tt.args), Calls: calls})
			found := false
			for _, r := range rs {
				if !strings.HasPrefix(r.Name, tt.check) {
					continue
				}
				found = true
				if r.Passed || r.Skipped || !strings.Contains(strings.Join(r.Diff, "\n"), tt.want) {
					t.Errorf("check %q: passed=%v skipped=%v diff %q, want a failure containing %q", r.Name, r.Passed, r.Skipped, r.Diff, tt.want)
				}
			}
			if !found {
				t.Fatalf("no check named %q", tt.check)
			}
		})
	}
}

// Case files: the examples' own pass; a wrong expectation fails with a readable diff, in
// text, JSON and JUnit.
func TestRunCases(t *testing.T) {
	zone := open(t, build(t, "go:wasm-examples/go/zone-filter"))
	f, err := wasmtest.LoadFile(filepath.Join(wasmbuild.Root(), "wasm-examples/go/zone-filter/cases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if rs := zone.Run(context.Background(), f); wasmtest.Failed(rs) != 0 || len(rs) != 3 {
		t.Fatalf("zone-filter's cases: %+v", rs)
	}
	pack := open(t, build(t, "go:wasm-examples/go/pack-score"))
	f, err = wasmtest.LoadFile(filepath.Join(wasmbuild.Root(), "wasm-examples/go/pack-score/cases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if rs := pack.Run(context.Background(), f); wasmtest.Failed(rs) != 0 {
		t.Fatalf("pack-score's cases: %+v", rs)
	}

	wrong, err := wasmtest.ParseFile("wrong.yaml", []byte(`
args: {"zones": ["zone-1"]}
cases:
- name: expects the wrong node
  pod: {metadata: {name: web}}
  nodes:
  - metadata: {name: a, labels: {topology.kubernetes.io/zone: zone-1}}
  - metadata: {name: b, labels: {topology.kubernetes.io/zone: zone-2}}
  expect:
    feasible: [b]
    rejected: {a: "whatever"}
`))
	if err != nil {
		t.Fatal(err)
	}
	rs := zone.Run(context.Background(), wrong)
	var text, js bytes.Buffer
	wasmtest.WriteText(&text, rs)
	for _, w := range []string{"FAIL  expects the wrong node", "feasible nodes: want [b], got [a]", "node b was rejected:", `node a: want rejected (reason containing "whatever"), got passed`, "0 passed, 1 failed"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text report lacks %q:\n%s", w, text.String())
		}
	}
	if err := wasmtest.WriteJSON(&js, rs); err != nil || !strings.Contains(js.String(), `"failed": 1`) {
		t.Errorf("JSON report: %v\n%s", err, js.String())
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	if err := wasmtest.WriteJUnit(junit, "zone-filter", rs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(junit)
	var suite struct {
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(b, &suite); err != nil || suite.Failures != 1 || len(suite.Cases) != 1 || suite.Cases[0].Failure == nil {
		t.Errorf("JUnit report: %v\n%s", err, b)
	}
}

// Signature cases: the pods a case says sign alike must sign as its pod does and get its
// answers; the ones it says differ must sign otherwise. A plugin that signs too little
// fails on the answers, and a wrong expectation fails with the signatures it got.
func TestRunSignatureCases(t *testing.T) {
	nodes := `
  nodes:
  - metadata: {name: in-a, labels: {pool: a}}
  - metadata: {name: in-b, labels: {pool: b}}`
	for _, tt := range []struct {
		src, cases string
		want       []string // substrings of the failures, in order of the cases; "" passes
	}{
		{"wat:wasm-examples/wat/pool-filter/pool-filter.wat", `
cases:
- name: a pool's pods sign alike and get the same verdicts; another pool's differ
  pod: {metadata: {name: web, labels: {pool: a}}, spec: {containers: [{name: c}]}}` + nodes + `
  signature:
    equal: [{metadata: {name: api, namespace: shop, labels: {pool: a, app: api}}, spec: {containers: [{name: c, image: nginx}]}}]
    differ: [{metadata: {name: db, labels: {pool: b}}}, {metadata: {name: free}}]
  expect: {feasible: [in-a]}
- name: signatures alone, without nodes
  pod: {metadata: {name: web, labels: {pool: a}}}
  signature:
    equal: [{metadata: {labels: {pool: a, tier: x}}}]
- name: a pod of another pool is not equal
  pod: {metadata: {name: web, labels: {pool: a}}}` + nodes + `
  signature:
    equal: [{metadata: {name: db, labels: {pool: b}}}]
- name: a pod of the same pool does not differ
  pod: {metadata: {name: web, labels: {pool: a}}}
  signature:
    differ: [{metadata: {name: api, labels: {pool: a}}}]
- name: pool-filter never answers unsignable
  pod: {metadata: {name: web}}
  signature: {unsignable: true}
`, []string{"", "", `pod db: want the signature of pod web, {"pool"="a"}, got {"pool"="b"}`,
			`pod api: want a signature other than pod web's, got the same`, "pod web: want unsignable (2), got signed"}},
		{"wat:plugins/wasmtest/testdata/signtoolittle.wat", `
cases:
- name: a filter that reads the app label must sign it
  pod: {metadata: {name: web, labels: {app: web}}}` + nodes + `
  signature:
    equal: [{metadata: {name: other, labels: {app: other}}}]
`, []string{"pods web and other sign alike ({}) but get different answers: node in-a passed vs rejected"}},
	} {
		t.Run(tt.src, func(t *testing.T) {
			f, err := wasmtest.ParseFile("sign.yaml", []byte(tt.cases))
			if err != nil {
				t.Fatal(err)
			}
			rs := open(t, build(t, tt.src)).Run(context.Background(), f)
			for i, r := range rs {
				got := strings.Join(r.Diff, "\n")
				switch want := tt.want[i]; {
				case want == "" && !r.Passed:
					t.Errorf("case %q failed:\n%s", r.Name, got)
				case want != "" && (r.Passed || !strings.Contains(got, want)):
					t.Errorf("case %q: passed=%v, diff:\n%s\nwant a failure containing %q", r.Name, r.Passed, got, want)
				}
			}
		})
	}
}

// Case files are bad input too: errors name the case and the field.
func TestCaseFileErrors(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"cases: []", "cases: at least one case is required"},
		{"cases: [{name: x, pod: {}, nodes: [{metadata: {name: a}}], expect: {feasble: [a]}}]", `unknown field "feasble"`},
		{"cases: [{name: x, nodes: [{metadata: {name: a}}]}]", "cases[0] (x).pod: required"},
		{"cases: [{name: x, pod: {}, nodes: [{metadata: {name: a}}], expect: {feasible: [z]}}]", `cases[0] (x).expect: node "z" is not one of the case's nodes`},
		{"cases: [{name: x, pod: {}, nodes: [{metadata: {name: a}}], pods: [{spec: {nodeName: q}}]}]", `cases[0] (x).pods[0].spec.nodeName: "q"`},
		{"cases: [{name: x, pod: {}, signature: {}}]", "cases[0] (x).signature: give equal or differ pods, or unsignable: true"},
		{"cases: [{name: x, pod: {}, signature: {unsignable: true}, binding: {points: [permit], node: {metadata: {name: a}}}}]", "cases[0] (x).signature: a signature case is a scheduling case"},
	} {
		if _, err := wasmtest.ParseFile("c.yaml", []byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

func build(t testing.TB, src string) string {
	kind, path, _ := strings.Cut(src, ":")
	if kind == "go" {
		return wasmbuild.Go(t, path)
	}
	return wasmbuild.WAT(t, path)
}

// bench times a module and a native plugin through the same interfaces, one row per point
// and batch size.
func TestBench(t *testing.T) {
	ctx := context.Background()
	p := open(t, build(t, "go:wasm-examples/go/node-resources-fit"))
	o := wasmtest.BenchOptions{Sizes: []int{10, 50}, Time: 20 * time.Millisecond}
	rows, err := p.Bench(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	native, err := wasmtest.BenchNative(ctx, "NodeResourcesFit", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	// The example is a Filter; the in-tree NodeResourcesFit filters and scores.
	if len(rows) != 2 || len(native) != 4 {
		t.Fatalf("rows %+v / %+v, want Filter at two sizes, and Filter and Score", rows, native)
	}
	for _, r := range append(rows, native...) {
		if r.Calls < 3 || r.P50 <= 0 || r.P99 < r.P50 || r.PerNode != r.P50/time.Duration(r.Nodes) {
			t.Errorf("row %+v", r)
		}
	}
	if rows[0].Instances != 1 || rows[0].MemoryKiB == 0 {
		t.Errorf("wasm row without pool figures: %+v", rows[0])
	}
	if _, err := wasmtest.BenchNative(ctx, "NoSuchPlugin", nil, o); err == nil || !strings.Contains(err.Error(), "no in-tree plugin") {
		t.Errorf("unknown native plugin: %v", err)
	}
}

// Admission and hook cases run against the examples' own case files; a wrong expectation
// fails with the difference.
func TestRunAdmissionAndHookCases(t *testing.T) {
	ctx := context.Background()
	for _, ex := range []string{"require-labels", "default-resources", "json-health-probe", "drain-prestop"} {
		t.Run(ex, func(t *testing.T) {
			p := open(t, build(t, "go:wasm-examples/go/"+ex))
			f, err := wasmtest.LoadFile(filepath.Join(wasmbuild.Root(), "wasm-examples/go", ex, "cases.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if rs := p.Run(ctx, f); wasmtest.Failed(rs) != 0 {
				var out bytes.Buffer
				wasmtest.WriteText(&out, rs)
				t.Fatalf("%s's cases:\n%s", ex, out.String())
			}
		})
	}
	p := open(t, build(t, "go:wasm-examples/go/default-resources"))
	wrong, err := wasmtest.ParseFile("wrong.yaml", []byte(`
cases:
- name: expects other defaults
  request:
    object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: default}, spec: {containers: [{name: c, image: busybox}]}}
  expect:
    allowed: false
    object: {spec: {containers: [{name: c, resources: {limits: {cpu: "2"}}}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wasmtest.WriteText(&out, p.Run(ctx, wrong))
	for _, w := range []string{"want the request denied, it was allowed", `object.spec.containers[0].resources.limits.cpu: want "2", got "500m"`} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, out.String())
		}
	}
}

// Admission and hook modules get the kind-generic checks; correct ones pass them.
func TestConformanceOfAdmissionAndHookModules(t *testing.T) {
	for _, tt := range []struct{ src, args, prefix string }{
		{"go:wasm-examples/go/require-labels", `{"labels": ["team"]}`, "admission: "},
		{"go:wasm-examples/go/json-health-probe", `{"port": 8080, "path": "/health", "field": "status", "value": "ok"}`, "probe: "},
		{"go:wasm-examples/go/default-resources", "", "admission: "},
	} {
		t.Run(tt.src, func(t *testing.T) {
			p, err := wasmtest.Open(context.Background(), build(t, tt.src), wasmtest.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			rs := p.Conformance(context.Background(), wasmtest.ConformanceOptions{Args: []byte(tt.args), Calls: 2000})
			kinds := 0
			for _, r := range rs {
				if strings.HasPrefix(r.Name, tt.prefix) {
					kinds++
				}
				if !r.Passed && !r.Skipped {
					t.Errorf("%s: %v", r.Name, r.Diff)
				}
			}
			// Five kind-generic checks, and for admission the reinvocation and verdict checks.
			if kinds < 5 || (tt.prefix == "admission: " && kinds < 6) {
				t.Errorf("%d checks named %q, want 5 (and for admission, 6 or more)", kinds, tt.prefix)
			}
		})
	}
}

// The kit reports a memory bomb (a policy that grows its memory 1 MiB at a time and
// ignores refusals) as a memory limit, not a timeout: the grow beyond the limit ends
// the call at once.
func TestMemoryBombIsReportedAsMemoryLimit(t *testing.T) {
	p := open(t, build(t, "wat:plugins/admitwasm/testdata/misbehave.wat"))
	f, err := wasmtest.ParseFile("bomb.yaml", []byte(`
cases:
- name: memory bomb
  request:
    object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: default, labels: {misbehave: memorybomb}}, spec: {containers: [{name: c, image: busybox}]}}
  expect:
    allowed: true
`))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wasmtest.WriteText(&out, p.Run(context.Background(), f))
	if !strings.Contains(out.String(), "memory limit: instance reached its memory limit") {
		t.Fatalf("report of a memory bomb:\n%s", out.String())
	}
}

// Without --timeout, the kit gives a module its component's default limit: the one
// source of truth is each component's constant.
func TestDefaultTimeoutIsTheComponents(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want time.Duration
	}{
		{"wat:wasm-examples/wat/drain-filter/drain-filter.wat", wasmhost.DefaultTimeout},
		{"wat:plugins/admitwasm/testdata/misbehave.wat", admitwasm.DefaultTimeout},
		{"wat:wasm-examples/wat/tcp-probe/tcp-probe.wat", nodewasm.DefaultLimit},
	} {
		p, err := wasmtest.Open(context.Background(), build(t, tt.src), wasmtest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Module().Timeout(); got != tt.want {
			t.Errorf("%s: default timeout %s, want %s", tt.src, got, tt.want)
		}
		p.Close(context.Background())
	}
	if !strings.Contains(wasmtest.DefaultTimeouts(), "10s for admission") {
		t.Errorf("help of the defaults: %s", wasmtest.DefaultTimeouts())
	}
}

// A warning over the 1 KiB cap is reported as such, in a case and in conformance.
func TestWarningOverCapIsReported(t *testing.T) {
	p := open(t, build(t, "wat:plugins/admitwasm/testdata/misbehave.wat"))
	f, err := wasmtest.ParseFile("warn.yaml", []byte(`
cases:
- name: a 10 MB warning
  request:
    object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: default, labels: {misbehave: warn10mb}}, spec: {containers: [{name: c, image: busybox}]}}
  expect:
    allowed: true
`))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wasmtest.WriteText(&out, p.Run(context.Background(), f))
	if !strings.Contains(out.String(), "validate: a warning over the size cap: 10485760 bytes, cut to 1 KiB") || !strings.Contains(out.String(), "FAIL") {
		t.Fatalf("report of a 10 MB warning:\n%s", out.String())
	}
}

// An admission policy is timed per request, from several callers at once, with the host's
// allocations per call.
func TestBenchAdmissionConcurrently(t *testing.T) {
	p := open(t, build(t, "go:wasm-examples/go/default-resources"))
	rows, err := p.Bench(context.Background(), wasmtest.BenchOptions{Time: 20 * time.Millisecond, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Point != "Mutate" || rows[0].Nodes != 0 || rows[0].Concurrency != 2 || rows[0].Calls < 6 ||
		rows[0].AllocsPerCall <= 0 || rows[0].BytesPerCall <= 0 || rows[0].Instances != 2 {
		t.Fatalf("rows %+v, want one Mutate row from 2 callers on 2 instances, with allocations", rows)
	}
	// A probe: one call against a loopback endpoint per call.
	probe := open(t, build(t, "wat:wasm-examples/wat/tcp-probe/tcp-probe.wat"))
	rows, err = probe.Bench(context.Background(), wasmtest.BenchOptions{Time: 20 * time.Millisecond, Args: []byte(`{"port": 8080}`)})
	if err != nil || len(rows) != 1 || rows[0].Point != "Probe" || rows[0].Calls < 3 {
		t.Fatalf("probe rows %+v, %v", rows, err)
	}
}

// The regression gate: slower than the threshold and the minimum, or more allocations.
func TestCompareBench(t *testing.T) {
	base := []wasmtest.BenchRow{{Plugin: "a", Point: "Filter", Nodes: 100, P50: 100 * time.Microsecond, AllocsPerCall: 10},
		{Plugin: "a", Point: "Validate", P50: 2 * time.Microsecond, AllocsPerCall: 5}}
	for _, tt := range []struct {
		name    string
		cur     wasmtest.BenchRow
		th      wasmtest.Thresholds
		regress string
	}{
		{"within the threshold", wasmtest.BenchRow{Plugin: "b", Point: "Filter", Nodes: 100, P50: 105 * time.Microsecond, AllocsPerCall: 10}, wasmtest.Thresholds{Percent: 10}, ""},
		{"over it (a rebuilt module of another name matches)", wasmtest.BenchRow{Plugin: "b", Point: "Filter", Nodes: 100, P50: 150 * time.Microsecond, AllocsPerCall: 10}, wasmtest.Thresholds{Percent: 10}, "p50 per call 100µs -> 150µs (+50%"},
		{"over it, under the minimum", wasmtest.BenchRow{Plugin: "a", Point: "Validate", P50: 3 * time.Microsecond, AllocsPerCall: 5}, wasmtest.Thresholds{Percent: 10, Min: 5 * time.Microsecond}, ""},
		{"more allocations", wasmtest.BenchRow{Plugin: "a", Point: "Validate", P50: 2 * time.Microsecond, AllocsPerCall: 9}, wasmtest.Thresholds{Percent: 10}, "allocations per call 5.0 -> 9.0"},
	} {
		cs := wasmtest.CompareBench(base, []wasmtest.BenchRow{tt.cur}, tt.th)
		err := wasmtest.Regressed(cs)
		if len(cs) != 1 || (tt.regress == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.regress) {
			t.Errorf("%s: %+v, %v; want regression %q", tt.name, cs, err, tt.regress)
		}
	}
	if cs := wasmtest.CompareBench(base, []wasmtest.BenchRow{{Plugin: "a", Point: "Score", Nodes: 100}}, wasmtest.Thresholds{}); len(cs) != 0 {
		t.Errorf("a point not in the baseline compared: %+v", cs)
	}
}

// A results grid: the example passes; wrong results, a wrong patchedResource and a broken
// policy fail with what differs; bad grids are refused with the field.
func TestGrid(t *testing.T) {
	ctx := context.Background()
	build(t, "go:wasm-examples/go/require-labels")
	build(t, "go:wasm-examples/go/default-resources")
	build(t, "go:wasm-examples/go/disallow-latest-tag")
	root := wasmbuild.Root()
	g, err := wasmtest.LoadGrid(filepath.Join(root, "wasm-examples/go/admission-grid/tests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := wasmtest.RunGrid(ctx, g, "", wasmtest.Options{})
	skipped := 0
	for _, r := range rs {
		if r.Skipped {
			skipped++ // its two skip rows: reported as skipped, not passed
		}
	}
	if err != nil || wasmtest.Failed(rs) != 0 || len(rs) != 7 || skipped != 2 {
		var out bytes.Buffer
		wasmtest.WriteText(&out, rs)
		t.Fatalf("the example grid: %v\n%s", err, out.String())
	}

	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ex := filepath.Join(root, "wasm-examples/go/admission-grid")
	write("tests.yaml", `
policies:
- {name: require-labels, path: `+filepath.Join(root, "wasm-examples/go/require-labels/require-labels.wasm")+`, args: {"labels": ["team"]}}
- {name: default-resources, path: `+filepath.Join(root, "wasm-examples/go/default-resources/default-resources.wasm")+`}
- {name: sidecar, path: `+build(t, "wat:plugins/wasmtest/testdata/sidecar.wat")+`}
resources: [`+filepath.Join(ex, "resources.yaml")+`]
results:
- {policy: require-labels, resources: [shop/unlabelled], result: pass}
- {policy: require-labels, resources: [shop/web], result: warn}
- {policy: default-resources, resources: [unlabelled], kind: Pod, result: pass, patchedResource: wrong.yaml}
- {policy: sidecar, resources: [shop/web], result: pass, patchedResource: `+filepath.Join(ex, "resources.yaml")+`}
`)
	write("wrong.yaml", "{apiVersion: v1, kind: Pod, metadata: {name: unlabelled, namespace: shop}, spec: {containers: [{name: app, image: 'busybox:1.36'}]}}")
	if _, err := wasmtest.LoadGrid(filepath.Join(dir, "tests.yaml")); err == nil || !strings.Contains(err.Error(), "results[3].patchedResource") {
		t.Fatalf("a patchedResource of four objects: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "tests.yaml"))
	write("tests.yaml", strings.Replace(string(b), "patchedResource: "+filepath.Join(ex, "resources.yaml"), "patchedResource: web.yaml", 1))
	write("web.yaml", "{apiVersion: v1, kind: Pod, metadata: {name: web, namespace: shop, labels: {team: shop}}, spec: {containers: [{name: app, image: 'busybox:1.36', resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 64Mi}}}]}}")
	g, err = wasmtest.LoadGrid(filepath.Join(dir, "tests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err = wasmtest.RunGrid(ctx, g, "", wasmtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wasmtest.WriteText(&out, rs)
	for _, w := range []string{
		`want pass, got fail: "pods \"unlabelled\" must carry label team`,
		"want warn, got pass",
		"patchedResource wrong.yaml: the mutated object differs at /spec/containers/0/resources/limits (added",
		"patchedResource web.yaml: the mutated object differs at /spec/containers/1 (added",
		"0 passed, 4 failed",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("grid report lacks %q:\n%s", w, out.String())
		}
	}
	for _, tt := range []struct{ yaml, want string }{
		{"policies: [a.wasm]\nresources: []\nresults: [{policy: b, resources: [x], result: pass}]", `results[0].policy: "b" is not one of the grid's policies`},
		{"policies: [a.wasm]\nresources: []\nresults: [{policy: a, resources: [x], result: passed}]", `results[0].result: "passed" must be pass, fail, warn or skip`},
		{"policies: [a.wasm]\nresources: []\nresults: [{policy: a, resources: [x], result: pass}]", `results[0].resources[0]: "x": no such resource`},
		{"policies: [{path: a.wasm, match: x}]\nresults: []", `unknown field "match"`},
	} {
		write("bad.yaml", tt.yaml)
		if _, err := wasmtest.LoadGrid(filepath.Join(dir, "bad.yaml")); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.yaml, err, tt.want)
		}
	}
}
