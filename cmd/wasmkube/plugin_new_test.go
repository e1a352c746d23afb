package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// TestPluginNew scaffolds plugins with `plugin new`, builds each with its own build.sh,
// and runs `plugin check` on it and `plugin test` with its cases.yaml: a generated plugin
// works as generated. C and WAT are tried for every kind; Go (about 10 s a build on a
// loaded machine) for the binding kinds and one scheduler and one admission kind, Rust
// and AssemblyScript (asc takes 10 to 30 s) for the binding kinds, Filter and Score
// (their wasmkube_sign exports) and, in Rust, Probe; -short leaves those three out.
func TestPluginNew(t *testing.T) {
	root := wasmbuild.Root()
	tmp := t.TempDir()
	combos := map[string][]string{
		"wat":            newKinds,
		"c":              newKinds,
		"go":             {"filter", "validate", "permit", "reserve", "prebind"},
		"rust":           {"filter", "score", "probe", "permit", "reserve", "prebind"},
		"assemblyscript": {"filter", "score", "permit", "reserve", "prebind"},
	}
	// The AssemblyScript compiler scripts/deps.sh installs for the examples.
	examplesModules := filepath.Join(root, "wasm-examples", "assemblyscript", "node_modules")
	tools := map[string]string{"wat": "wat2wasm", "c": "clang", "go": "", "rust": "/usr/bin/cargo",
		"assemblyscript": filepath.Join(examplesModules, ".bin", "asc")}
	// The Rust plugins share a target folder, so the SDK is compiled once.
	cargoTarget := filepath.Join(tmp, "cargo-target")
	for _, lang := range []string{"wat", "c", "go", "rust", "assemblyscript"} {
		for _, kind := range combos[lang] {
			t.Run(lang+"/"+kind, func(t *testing.T) {
				if testing.Short() && lang != "wat" && lang != "c" {
					t.Skip("-short: a build in this language takes seconds")
				}
				if tool := tools[lang]; tool != "" {
					if _, err := exec.LookPath(tool); err != nil {
						t.Skipf("%s is missing (scripts/deps.sh installs it)", tool)
					}
				}
				dir := filepath.Join(tmp, lang+"-"+kind)
				var out bytes.Buffer
				if err := runPluginNew(&out, dir, &pluginNewOptions{lang: lang, kind: kind, sdk: root}); err != nil {
					t.Fatal(err)
				}
				want := []string{"README.md", "build.sh", "cases.yaml"}
				for _, f := range want {
					if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
						t.Errorf("plugin new wrote no %s: %v\n%s", f, err, out.String())
					}
				}
				readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
				if !strings.Contains(string(readme), "wasmkube plugin check "+filepath.Base(dir)+".wasm") {
					t.Errorf("README.md names no check command:\n%s", readme)
				}
				if lang == "assemblyscript" {
					// What the build's npm install would write, from the examples' own install
					// (so the test needs no registry): the compiler and the SDK.
					linkNodeModules(t, filepath.Join(dir, "node_modules"), examplesModules, filepath.Join(root, "sdk", "assemblyscript"))
				}
				module := filepath.Join(dir, filepath.Base(dir)+".wasm")
				cmd := exec.Command("bash", "build.sh")
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+filepath.Join(runtime.GOROOT(), "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
					"CARGO_TARGET_DIR="+cargoTarget)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("build.sh: %v\n%s", err, b)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				var check bytes.Buffer
				err := runPluginCheck(ctx, &check, module, &pluginCheckOptions{timeout: wasmhost.DefaultTimeout, memoryLimit: "64Mi"})
				if err != nil || !strings.Contains(check.String(), "wasmkube_"+kind) || !strings.Contains(check.String(), "interrupt:    deadline-flag") {
					t.Fatalf("plugin check: %v\n%s", err, check.String())
				}
				var test bytes.Buffer
				o := &kitOptions{memoryLimit: "64Mi", output: "text"} // the default limit, as the commands have it
				if err := runPluginTest(ctx, &test, module, []string{filepath.Join(dir, "cases.yaml")}, o); err != nil {
					t.Fatalf("plugin test: %v\n%s", err, test.String())
				}
				if !regexp.MustCompile(`(?m)^[1-9][0-9]* passed, 0 failed`).MatchString(test.String()) {
					t.Errorf("plugin test did not pass the generated cases:\n%s", test.String())
				}
				if !strings.Contains(string(readme), "wasmkube plugin conformance "+filepath.Base(dir)+".wasm") {
					t.Errorf("README.md names no conformance command:\n%s", readme)
				}
				// The README promises conformance too. The C and WAT templates (a second or
				// two each) and every language's binding kinds (their own checks: an Unreserve
				// that undoes its Reserve, a bounded Permit wait, hints that queue what helps)
				// are checked here; the Go, Rust and AssemblyScript SDKs' examples of the other
				// kinds are checked by their packages' tests. A hook's leak check makes 20,000
				// calls over loopback HTTP (10 s): one hook kind is enough. The limit is 1 s, as
				// plugins/wasmtest's tests give: at a load of 20 on two cores a call of a
				// correct plugin can take longer than the default 100 ms.
				binding := kind == "permit" || kind == "reserve" || kind == "prebind"
				if binding || ((lang == "c" || lang == "wat") && ((kind != "probe" && kind != "prestop") || (lang == "wat" && kind == "probe"))) {
					var conf bytes.Buffer
					co := *o
					co.timeout = time.Second
					if err := runPluginConformance(ctx, &conf, module, &co); err != nil {
						t.Fatalf("plugin conformance: %v\n%s", err, conf.String())
					}
					if !regexp.MustCompile(`(?m)^[1-9][0-9]* passed, 0 failed`).MatchString(conf.String()) {
						t.Errorf("plugin conformance did not pass the generated plugin:\n%s", conf.String())
					}
				}
			})
		}
	}
}

// linkNodeModules makes dst a node_modules with the packages of src (assemblyscript and
// its dependencies) and wasmkube pointing at sdk, as npm install of the generated
// package.json makes it.
func linkNodeModules(t *testing.T, dst, src, sdk string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dst, ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.Name() == "wasmkube" {
			continue
		}
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(sdk, filepath.Join(dst, "wasmkube")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../assemblyscript/bin/asc.js", filepath.Join(dst, ".bin", "asc")); err != nil {
		t.Fatal(err)
	}
}

// TestPluginNewRefuses checks the errors of plugin new: unknown or missing language or
// kind, a bad name, an existing folder, and a language without a source tree.
func TestPluginNewRefuses(t *testing.T) {
	tmp := t.TempDir()
	existing := filepath.Join(tmp, "taken")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		o         pluginNewOptions
		want      string
	}{
		{"no lang", "a", pluginNewOptions{kind: "filter"}, "--lang is required"},
		{"unknown lang", "a", pluginNewOptions{lang: "cobol", kind: "filter"}, `--lang "cobol": unknown language; one of assemblyscript, c, go, rust, wat`},
		{"no kind", "a", pluginNewOptions{lang: "wat"}, "--kind is required"},
		{"unknown kind", "a", pluginNewOptions{lang: "wat", kind: "bind"}, `--kind "bind": unknown kind; one of filter, score, validate, mutate, probe, prestop`},
		{"upper case", "My_Plugin", pluginNewOptions{lang: "wat", kind: "filter"}, `plugin name "My_Plugin": must be 1 to 63 lowercase letters`},
		{"trailing dash", "plugin-", pluginNewOptions{lang: "wat", kind: "filter"}, `plugin name "plugin-"`},
		{"existing", "taken", pluginNewOptions{lang: "wat", kind: "filter"}, "taken already exists"},
		{"bad sdk", "a", pluginNewOptions{lang: "go", kind: "filter", sdk: tmp}, "not a wasmkube source tree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runPluginNew(&bytes.Buffer{}, filepath.Join(tmp, tc.dir), &tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if tc.dir != "taken" {
				if _, err := os.Stat(filepath.Join(tmp, tc.dir)); err == nil {
					t.Errorf("a refused plugin new left %s behind", tc.dir)
				}
			}
		})
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 {
		t.Errorf("temporary folders left behind: %v", entries)
	}
}

// TestPluginNewInTree checks that a Go plugin written inside the source tree has no go.mod
// (it is a package of the wasmkube module, as the examples are) and that Rust and
// AssemblyScript plugins there name the SDK by a relative path.
func TestPluginNewInTree(t *testing.T) {
	root := wasmbuild.Root()
	tmp, err := os.MkdirTemp(root, ".plugin-new-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for lang, file := range map[string]string{"go": "go.mod", "rust": "Cargo.toml", "assemblyscript": "package.json"} {
		dir := filepath.Join(tmp, "x", lang)
		if err := runPluginNew(&bytes.Buffer{}, dir, &pluginNewOptions{lang: lang, kind: "filter"}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if lang == "go" {
			if err == nil {
				t.Errorf("a Go plugin inside the tree has a go.mod:\n%s", b)
			}
			continue
		}
		if err != nil || !strings.Contains(string(b), "../../../sdk/") {
			t.Errorf("%s of a %s plugin inside the tree does not name the SDK as ../../../sdk/: %v\n%s", file, lang, err, b)
		}
	}
}

// TestPluginNewPreStopSpelling checks that --kind preStop, as Kubernetes spells the hook,
// scaffolds the prestop kind.
func TestPluginNewPreStopSpelling(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "drain")
	var out bytes.Buffer
	if err := runPluginNew(&out, dir, &pluginNewOptions{lang: "wat", kind: "preStop"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "wat prestop plugin drain") {
		t.Errorf("plugin new --kind preStop did not write a prestop plugin:\n%s", out.String())
	}
	src, err := os.ReadFile(filepath.Join(dir, "drain.wat"))
	if err != nil || !strings.Contains(string(src), "wasmkube_prestop") {
		t.Errorf("drain.wat exports no wasmkube_prestop: %v\n%s", err, src)
	}
}

// TestPluginNewReserveEnablesPostBind checks that the README of a reserve plugin enables it
// under multiPoint: the template takes its count back at PostBind too, and the scheduler
// calls PostBind only for plugins enabled there.
func TestPluginNewReserveEnablesPostBind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	if err := runPluginNew(&bytes.Buffer{}, dir, &pluginNewOptions{lang: "wat", kind: "reserve"}); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil || !strings.Contains(string(readme), "      multiPoint:\n        enabled: [{name: cap}]") {
		t.Errorf("README.md does not enable the reserve plugin under multiPoint: %v\n%s", err, readme)
	}
}
