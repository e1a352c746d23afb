package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// runCLI runs wasmkube with args and puts the flags it set back to their defaults (the
// commands are package globals).
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	refuseUnknownSubcommands(rootCmd)
	var out bytes.Buffer
	rootCmd.SetArgs(args)
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	err := rootCmd.Execute()
	if cmd, _, ferr := rootCmd.Find(args); ferr == nil {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if s, ok := f.Value.(pflag.SliceValue); ok {
				_ = s.Replace(nil)
			} else {
				_ = f.Value.Set(f.DefValue)
			}
			f.Changed = false
		})
	}
	return out.String(), err
}

func TestPluginRecordFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"plugin", "record", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"plugin", "record", "--kubeconfig", "k", "-o", "r", "--scheduling=false"}, "--scheduling=false needs --admission"},
		{[]string{"plugin", "record", "--kubeconfig", "k", "-o", "r", "--scheduling=false", "--admission", "pods", "--cycles", "3"}, "use --requests"},
		{[]string{"plugin", "record", "--kubeconfig", "k", "-o", "r", "--requests", "x"}, `invalid argument "x" for "--requests"`},
		{[]string{"plugin", "replay", "rec.jsonl", "--no-such-flag"}, "unknown flag: --no-such-flag"},
	} {
		_, err := runCLI(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("wasmkube %v: got %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

// recording is a hand-written recording with one scheduling decision and two admitted
// pod creates (one without the team label) in namespace shop.
const recording = `{"node":{"metadata":{"name":"n0"},"status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}}}
{"object":{"apiVersion":"v1","resource":"namespaces","kind":"Namespace","name":"shop","object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}}}
{"admission":{"operation":"CREATE","apiVersion":"v1","resource":"pods","kind":"Pod","namespace":"shop","name":"web","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}
{"admission":{"operation":"CREATE","apiVersion":"v1","resource":"pods","kind":"Pod","namespace":"shop","name":"api","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"api","namespace":"shop","labels":{"team":"a"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}
{"cycle":{"pod":{"metadata":{"name":"api","namespace":"shop"},"spec":{"containers":[{"name":"c","image":"busybox"}]}},"node":"n0"}}
`

// One replay reports both parts of a recording; a config without an admission: section
// is an error naming it.
func TestPluginReplayAdmission(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jsonl")
	noAdmission := filepath.Join(dir, "scheduler-only.yaml")
	candidate := filepath.Join(dir, "candidate.yaml")
	labels := wasmbuild.Go(t, "wasm-examples/go/require-labels")
	for file, data := range map[string]string{rec: recording, noAdmission: "scheduler: {}\n",
		candidate: fmt.Sprintf(`admission:
  policies:
  - name: require-labels
    path: %s
    args: {labels: [team]}
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
`, labels)} {
		if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	var out bytes.Buffer
	err := runPluginReplay(ctx, &out, rec, &replayOptions{config: noAdmission, output: "text"})
	if err == nil || !strings.Contains(err.Error(), "no admission: section") || !strings.Contains(err.Error(), noAdmission) {
		t.Fatalf("a config without admission: got %v, want an error naming the file and the section", err)
	}

	out.Reset()
	if err := runPluginReplay(ctx, &out, rec, &replayOptions{config: candidate, output: "text"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"replayed 1 scheduling cycles", "replayed 2 admission requests",
		`refused CREATE pods shop/web by require-labels: admission policy require-labels denied the request: pods "web" must carry label team`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := runPluginReplay(ctx, &out, rec, &replayOptions{config: candidate, output: "json"}); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Cycles    int `json:"cycles"`
		Admission struct {
			Requests        int            `json:"requests"`
			RefusedByPolicy map[string]int `json:"refusedByPolicy"`
		} `json:"admission"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("json output: %v\n%s", err, out.String())
	}
	if rep.Cycles != 1 || rep.Admission.Requests != 2 || rep.Admission.RefusedByPolicy["require-labels"] != 1 {
		t.Fatalf("json output: want 1 cycle, 2 requests, 1 refused by require-labels\n%s", out.String())
	}
}
