package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

func TestPluginCheck(t *testing.T) {
	opts := func(args string) *pluginCheckOptions {
		return &pluginCheckOptions{args: args, timeout: 100 * time.Millisecond, memoryLimit: "64Mi", benchNodes: 10}
	}
	tests := []struct {
		name    string
		file    string
		args    string
		wantErr string
		want    []string
	}{
		{"wat filter", wasmbuild.WAT(t, "wasm-examples/wat/drain-filter/drain-filter.wat"), "", "",
			[]string{"ABI:          v1", "entry points: wasmkube_filter", "wasmkube_filter          ok", "node passed",
				"bench:        wasmkube_filter          10 nodes per call", "result:       OK"}},
		{"all kinds", wasmbuild.Go(t, "sdk/go/internal/testguest"), `{"greeting":"hi"}`, "",
			[]string{"wasmkube_prefilter, wasmkube_filter, wasmkube_postfilter, wasmkube_prescore, wasmkube_score, wasmkube_normalizescore",
				"wasmkube_score           ok", "score 4", "nominated wasmkube-smoke-node", "result:       OK"}},
		{"wrong ABI", wasmbuild.WAT(t, "plugins/testdata/v2.wat"), "", "exports wasmkube_abi_version 2, this host supports 1",
			[]string{"result:       REJECTED"}},
		{"smoke trap", wasmbuild.WAT(t, "plugins/testdata/alwaystrap.wat"), "", "plugin check failed",
			[]string{"wasmkube_score           FAILED", "trap: wasm error: unreachable", "result:       REJECTED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runPluginCheck(context.Background(), &out, tt.file, opts(tt.args))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q\n%s", err, tt.wantErr, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
