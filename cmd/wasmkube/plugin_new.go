package main

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
)

// The templates of `plugin new`: templates/<lang>/ holds one source per kind
// (<kind>.<ext>, Go files with .tmpl added) and the build files; templates/cases/<kind>.yaml the case file of a
// scheduler kind; templates/README.md the folder's README.
//
//go:embed templates
var newTemplates embed.FS

// newLangs are the languages `plugin new` writes, with the kinds each supports and
// whether it builds against the SDKs of a wasmkube source tree (--sdk).
var newLangs = map[string]struct {
	kinds   []string
	needSDK bool
}{
	"go":             {kinds: newKinds, needSDK: true},
	"c":              {kinds: newKinds},
	"wat":            {kinds: newKinds},
	"rust":           {kinds: newKinds, needSDK: true},
	"assemblyscript": {kinds: newKinds, needSDK: true},
}

// newKinds are the kinds `plugin new` writes; schedulerKinds of them are checked by
// `plugin conformance` too.
var (
	newKinds       = []string{"filter", "score", "validate", "mutate", "probe", "prestop", "permit", "reserve", "prebind"}
	schedulerKinds = []string{"filter", "score", "permit", "reserve", "prebind"}
	// configKeys are the profile keys the README enables a scheduler kind under
	// (config.JSONKey of the point). The reserve template also releases at PostBind,
	// which runs only for plugins enabled at postBind: multiPoint enables it at every
	// point it exports.
	configKeys = map[string]string{"filter": "filter", "score": "score", "permit": "permit", "reserve": "multiPoint", "prebind": "preBind"}
)

// pluginNameRE is what a plugin's name may be: it names the module file, the plugin in
// configs, metrics and reasons, and (with - as _) a Rust crate.
var pluginNameRE = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

type pluginNewOptions struct {
	lang, kind, sdk string
}

// newData is what the templates see.
type newData struct {
	Name, Lang, Kind string
	Module           string   // NAME.wasm
	Crate            string   // NAME with - as _
	Scheduler        bool     // the kind is a scheduler kind (plugin conformance checks it)
	ConfigKey        string   // a scheduler kind's key in a profile's plugins ("preBind")
	SDK              string   // the wasmkube source tree, relative to the plugin's folder when inside it
	InTree           bool     // the folder is inside the source tree (a Go plugin is then a package of its module)
	GoVersion        string   // the go line of the source tree's go.mod
	SDKRequires      []string // "module version" of what sdk/go imports besides the standard library
	GoSum            string   // the source tree's go.sum lines of those modules
	ASVersion        string   // the AssemblyScript version sdk/assemblyscript pins
	Build            string   // how the README says to build
}

func init() {
	o := &pluginNewOptions{}
	c := &cobra.Command{
		Use:   "new --lang LANG --kind KIND NAME",
		Short: "Scaffold a plugin folder: source, build script, README and a case file",
		Long: `new writes the folder NAME (a path; its last element is the plugin's name) with a plugin
of one kind in one language that builds as generated and passes 'wasmkube plugin check'
and the 'wasmkube plugin test' cases of its cases.yaml:

  --lang go|rust|assemblyscript|c|wat
  --kind filter|score|permit|reserve|prebind|validate|mutate|probe|prestop

Go, Rust and AssemblyScript plugins build against the SDKs of a wasmkube source tree
(--sdk; by default the tree holding the current directory, else the one this binary was
built from). C (clang, no libc) and WAT (wat2wasm) plugins need nothing but their
compiler. See docs/plugin-kit.md.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("plugin new takes one NAME (the folder to create), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, argv []string) error {
			return runPluginNew(cmd.OutOrStdout(), argv[0], o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.lang, "lang", "", "go, rust, assemblyscript, c or wat")
	f.StringVar(&o.kind, "kind", "", "filter, score, permit, reserve, prebind, validate, mutate, probe or prestop (or preStop)")
	f.StringVar(&o.sdk, "sdk", "", "the wasmkube source tree whose sdk/ a Go, Rust or AssemblyScript plugin builds against")
	pluginCmd.AddCommand(c)
}

func sortedLangs() []string {
	var ls []string
	for l := range newLangs {
		ls = append(ls, l)
	}
	slices.Sort(ls)
	return ls
}

// runPluginNew scaffolds dir with a plugin of o.kind in o.lang.
func runPluginNew(out io.Writer, dir string, o *pluginNewOptions) error {
	// Kubernetes spells the hook preStop; the kinds are lowercase (as the annotation
	// hooks.wasmkube.io/prestop.<container> is), and either spelling is that kind.
	o.kind = strings.ToLower(o.kind)
	lang, ok := newLangs[o.lang]
	switch {
	case o.lang == "":
		return fmt.Errorf("--lang is required: one of %s", strings.Join(sortedLangs(), ", "))
	case !ok:
		return fmt.Errorf("--lang %q: unknown language; one of %s", o.lang, strings.Join(sortedLangs(), ", "))
	case o.kind == "":
		return fmt.Errorf("--kind is required: one of %s", strings.Join(newKinds, ", "))
	case !slices.Contains(newKinds, o.kind):
		return fmt.Errorf("--kind %q: unknown kind; one of %s", o.kind, strings.Join(newKinds, ", "))
	case !slices.Contains(lang.kinds, o.kind):
		return fmt.Errorf("--kind %s: not available for --lang %s (plugin new has no template for it yet; the SDK has the binding: docs/abi.md section 1.4); %s has %s", o.kind, o.lang, o.lang, strings.Join(lang.kinds, ", "))
	}
	dir = filepath.Clean(dir)
	name := filepath.Base(dir)
	if !pluginNameRE.MatchString(name) {
		return fmt.Errorf("plugin name %q: must be 1 to 63 lowercase letters, digits and '-', starting with a letter and not ending with '-' (it names the module, and the plugin in configs and metrics)", name)
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("%s already exists: plugin new writes a new folder and never overwrites one", dir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	d := newData{Name: name, Lang: o.lang, Kind: o.kind, Module: name + ".wasm", Crate: strings.ReplaceAll(name, "-", "_"),
		Scheduler: slices.Contains(schedulerKinds, o.kind), ConfigKey: configKeys[o.kind]}
	if lang.needSDK {
		root, err := findSourceTree(o.sdk)
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		d.SDK = root
		// Inside the tree a relative path keeps the folder movable with it.
		if in, err := filepath.Rel(root, abs); err == nil && in != ".." && !strings.HasPrefix(in, ".."+string(filepath.Separator)) {
			if r, err := filepath.Rel(abs, root); err == nil {
				d.SDK, d.InTree = filepath.ToSlash(r), true
			}
		}
		if d.GoVersion, err = goVersionOf(root); err != nil {
			return err
		}
		if o.lang == "go" {
			if d.SDKRequires, d.GoSum, err = sdkRequires(root); err != nil {
				return err
			}
		}
		if o.lang == "assemblyscript" {
			if d.ASVersion, err = ascVersionOf(root); err != nil {
				return err
			}
		}
	}
	files, err := renderPlugin(d)
	if err != nil {
		return err
	}
	// Write everything into a temporary sibling and rename it into place, so a failure
	// leaves no half-written folder behind.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+name+".new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var names []string
	for _, f := range files {
		p := filepath.Join(tmp, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f.name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, f.data, mode); err != nil {
			return err
		}
		names = append(names, f.name)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "created %s/ (%s %s plugin %s): %s\n", dir, o.lang, o.kind, name, strings.Join(names, ", "))
	// Every kind has conformance checks (scheduler, admission or kubelet-hook ones).
	fmt.Fprintf(out, "next:\n  cd %s\n  ./build.sh\n  wasmkube plugin check %s\n  wasmkube plugin test %s cases.yaml\n  wasmkube plugin conformance %s\n",
		dir, d.Module, d.Module, d.Module)
	return nil
}

type newFile struct {
	name string
	data []byte
}

// renderPlugin renders the files of a plugin folder.
func renderPlugin(d newData) ([]newFile, error) {
	type tmpl struct{ src, dst string }
	var ts []tmpl
	switch d.Lang {
	case "go":
		// .tmpl: a go.mod would make the folder another module, out of reach of go:embed,
		// and .go files a package of this one.
		ts = []tmpl{{"go/" + d.Kind + ".go.tmpl", "main.go"}, {"go/build.sh", "build.sh"}}
		if !d.InTree {
			// Inside the tree the plugin is a package of the wasmkube module, as the
			// examples are (a go.mod would hide it from `go build ./wasm-examples/go/...`).
			ts = append(ts, tmpl{"go/go.mod.tmpl", "go.mod"}, tmpl{"go/go.sum.tmpl", "go.sum"})
		}
		d.Build = "./build.sh    # GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o " + d.Module + " ."
	case "c":
		ts = []tmpl{{"c/" + d.Kind + ".c", d.Name + ".c"}, {"c/build.sh", "build.sh"}}
		d.Build = "./build.sh    # clang --target=wasm32 -nostdlib -mbulk-memory -Wl,--no-entry (no libc)"
	case "wat":
		ts = []tmpl{{"wat/" + d.Kind + ".wat", d.Name + ".wat"}, {"wat/build.sh", "build.sh"}}
		d.Build = "./build.sh    # wat2wasm -o " + d.Module + " " + d.Name + ".wat"
	case "rust":
		ts = []tmpl{{"rust/" + d.Kind + ".rs", "src/lib.rs"}, {"rust/Cargo.toml", "Cargo.toml"}, {"rust/build.sh", "build.sh"}}
		d.Build = "./build.sh    # cargo build --offline --release --target wasm32-unknown-unknown"
	case "assemblyscript":
		ts = []tmpl{{"assemblyscript/" + d.Kind + ".ts", "assembly/index.ts"}, {"assemblyscript/package.json", "package.json"},
			{"assemblyscript/asconfig.json", "asconfig.json"}, {"assemblyscript/build.sh", "build.sh"}}
		d.Build = "./build.sh    # npm install (the first time), then asc with the SDK's asconfig.json"
	}
	ts = append(ts, tmpl{"README.md", "README.md"})
	ts = append(ts, tmpl{"cases/" + d.Kind + ".yaml", "cases.yaml"})
	var files []newFile
	for _, t := range ts {
		src, err := newTemplates.ReadFile(path.Join("templates", t.src))
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", t.src, err)
		}
		tp, err := template.New(t.src).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", t.src, err)
		}
		var b bytes.Buffer
		if err := tp.Execute(&b, d); err != nil {
			return nil, fmt.Errorf("template %s: %w", t.src, err)
		}
		files = append(files, newFile{t.dst, b.Bytes()})
	}
	return files, nil
}

// findSourceTree returns the wasmkube source tree (the folder with go.mod of module
// github.com/wasmkube/wasmkube and sdk/): dir when given, else the tree holding the
// current directory, else the one next to the executable (bin/wasmkube), else the one
// this binary was compiled from.
func findSourceTree(dir string) (string, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		if !isSourceTree(abs) {
			return "", fmt.Errorf("--sdk %s: not a wasmkube source tree (no go.mod of module github.com/wasmkube/wasmkube with sdk/ beside it)", dir)
		}
		return abs, nil
	}
	var candidates []string
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			candidates = append(candidates, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			candidates = append(candidates, filepath.Dir(filepath.Dir(exe)))
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		candidates = append(candidates, filepath.Dir(filepath.Dir(filepath.Dir(file))))
	}
	for _, c := range candidates {
		if isSourceTree(c) {
			return c, nil
		}
	}
	return "", errors.New("this language builds against the SDKs of a wasmkube source tree, and none was found (not in or above the current directory, nor where this binary was built): pass --sdk DIR")
}

func isSourceTree(dir string) bool {
	v, err := goVersionOf(dir)
	if err != nil || v == "" {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, "sdk"))
	return err == nil && st.IsDir()
}

// sdkModules are the modules sdk/go imports besides the standard library (gjson for
// sdk.Request.Get, and what gjson needs). A plugin outside the source tree is its own
// module, so its go.mod must require them at the tree's versions, and its go.sum carry
// their hashes for the build to be checked.
var sdkModules = []string{"github.com/tidwall/gjson", "github.com/tidwall/match", "github.com/tidwall/pretty"}

// sdkRequires reads the versions of sdkModules from the tree's go.mod and their lines of
// its go.sum.
func sdkRequires(root string) ([]string, string, error) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, "", err
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return nil, "", err
	}
	var reqs []string
	var sums strings.Builder
	for _, m := range sdkModules {
		version := ""
		for _, l := range strings.Split(string(mod), "\n") {
			if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "require ")); len(f) >= 2 && f[0] == m {
				version = f[1]
				break
			}
		}
		if version == "" {
			return nil, "", fmt.Errorf("%s: no require of %s, which sdk/go imports", filepath.Join(root, "go.mod"), m)
		}
		reqs = append(reqs, m+" "+version)
		for _, l := range strings.Split(string(sum), "\n") {
			if strings.HasPrefix(l, m+" "+version+" ") || strings.HasPrefix(l, m+" "+version+"/go.mod ") {
				sums.WriteString(l + "\n")
			}
		}
	}
	return reqs, sums.String(), nil
}

// goVersionOf reads the go line of the wasmkube go.mod in dir; an error when dir holds
// no go.mod of that module.
func goVersionOf(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	var module, version string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "module" {
			module = f[1]
		}
		if len(f) == 2 && f[0] == "go" {
			version = f[1]
		}
	}
	if module != "github.com/wasmkube/wasmkube" {
		return "", fmt.Errorf("%s: not the wasmkube module", filepath.Join(dir, "go.mod"))
	}
	return version, nil
}

// ascVersionOf reads the AssemblyScript version sdk/assemblyscript pins (its
// peerDependencies), which a generated plugin installs.
func ascVersionOf(root string) (string, error) {
	f := filepath.Join(root, "sdk", "assemblyscript", "package.json")
	b, err := os.ReadFile(f)
	if err != nil {
		return "", fmt.Errorf("the AssemblyScript SDK: %w", err)
	}
	var pkg struct {
		PeerDependencies map[string]string `json:"peerDependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("%s: %w", f, err)
	}
	v := pkg.PeerDependencies["assemblyscript"]
	if v == "" {
		return "", fmt.Errorf("%s: no assemblyscript version in peerDependencies", f)
	}
	return v, nil
}
