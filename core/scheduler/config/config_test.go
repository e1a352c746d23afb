package config

import (
	"strings"
	"testing"
)

func TestParseDefaultsAndSections(t *testing.T) {
	cfg, err := Parse([]byte("apiserver: {listen: x}\nkubelet: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != DefaultSchedulerName || cfg.Parallelism != DefaultParallelism {
		t.Fatalf("defaults: %+v", cfg)
	}
	cfg, err = Parse([]byte(`
scheduler:
  percentageOfNodesToScore: 30
  parallelism: 4
  profiles:
  - schedulerName: a
    plugins:
      score:
        disabled: [{name: "*"}]
        enabled: [{name: NodeResourcesFit, weight: 3}]
    pluginConfig:
    - name: NodeResourcesFit
      args: {scoringStrategy: {type: MostAllocated}}
  wasmPlugins:
  - name: policy
    path: policy.wasm
    timeout: 50ms
    memoryLimit: 16Mi
    pool: 4
`))
	if err != nil {
		t.Fatal(err)
	}
	if *cfg.PercentageOfNodesToScore != 30 || cfg.Parallelism != 4 || cfg.Profile("a") == nil ||
		string(cfg.Profile("a").Args("NodeResourcesFit")) != `{"scoringStrategy":{"type":"MostAllocated"}}` {
		t.Fatalf("parsed %+v", cfg)
	}
	w := cfg.WasmPlugins[0]
	if w.FailurePolicy != "Fail" || w.Timeout.Duration.Milliseconds() != 50 || w.MemoryLimit.Value() != 16<<20 || w.Pool != 4 {
		t.Fatalf("wasm plugin %+v", w)
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"scheduler: {profile: []}", `unknown field "profile"`},
		{"scheduler: {profiles: [{schedulerName: a, plugins: {filters: {}}}]}", `unknown field "filters"`},
		{"scheduler: {profiles: [{schedulerName: a}, {schedulerName: a}]}", `scheduler.profiles[1].schedulerName: duplicate profile "a"`},
		{"scheduler: {profiles: [{}]}", "scheduler.profiles[0].schedulerName: required"},
		{"scheduler: {percentageOfNodesToScore: 101}", "scheduler.percentageOfNodesToScore: must be between 0 and 100"},
		{"scheduler: {parallelism: x}", "scheduler.parallelism"},
		{"scheduler: {wasmPlugins: [{name: a}]}", "scheduler.wasmPlugins[0].path: required"},
		{"scheduler: {wasmPlugins: [{name: a, path: a.wasm, failurePolicy: Maybe}]}", `scheduler.wasmPlugins[0].failurePolicy: "Maybe": must be Fail or Ignore`},
		{"scheduler: {wasmPlugins: [{name: a, path: a.wasm, timeout: soon}]}", "scheduler"},
		{"scheduler: {profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: '*'}]}}}]}", `only valid in disabled`},
		{"[1, 2]", "mapping of sections"},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	known := func(n string) bool { return n != "Nope" }
	implements := func(n, point string) bool { return !(n == "ScoreOnly" && point != Score) }
	p := &Profile{SchedulerName: "p", Plugins: &Plugins{
		Filter:     PluginSet{Disabled: []Plugin{{Name: "NodePorts"}}},
		Score:      PluginSet{Enabled: []Plugin{{Name: "TaintToleration", Weight: 7}, {Name: "ScoreOnly"}}},
		MultiPoint: PluginSet{Enabled: []Plugin{{Name: "ScoreOnly"}}},
	}}
	got, err := p.Resolve(known, implements)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got[Filter] {
		if e.Name == "NodePorts" || e.Name == "ScoreOnly" {
			t.Fatalf("filter list %v", got[Filter])
		}
	}
	var tt, so int32
	for _, e := range got[Score] {
		switch e.Name {
		case "TaintToleration":
			tt = e.Weight
		case "ScoreOnly":
			so = e.Weight
		}
	}
	if tt != 7 || so != 1 || len(got[Score]) != 7 {
		t.Fatalf("score list %v", got[Score])
	}
	_, err = (&Profile{SchedulerName: "p", Plugins: &Plugins{PreBind: PluginSet{Enabled: []Plugin{{Name: "Nope"}}}}}).Resolve(known, implements)
	if err == nil || !strings.Contains(err.Error(), `scheduler.profiles[p].plugins.preBind.enabled[0].name: unknown plugin "Nope"`) {
		t.Fatalf("err %v", err)
	}
	_, err = (&Profile{SchedulerName: "p", Plugins: &Plugins{Filter: PluginSet{Enabled: []Plugin{{Name: "ScoreOnly"}}}}}).Resolve(known, implements)
	if err == nil || !strings.Contains(err.Error(), `plugin "ScoreOnly" does not implement Filter`) {
		t.Fatalf("err %v", err)
	}
}
