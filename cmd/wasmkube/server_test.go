package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestServerOptionsPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(cfg, []byte("server:\n  dataDir: /from/file\n  listen: 127.0.0.1:1111\n  etcdEndpoints: [http://a:2379, http://b:2379]\n  defaultTolerationSeconds: 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		env      map[string]string
		args     []string
		dataDir  string
		listen   string
		etcd     []string
		tolerate int64
		wantErr  bool
	}{
		{name: "file", args: []string{"--config", cfg}, dataDir: "/from/file", listen: "127.0.0.1:1111", etcd: []string{"http://a:2379", "http://b:2379"}, tolerate: 30},
		{name: "env over file", env: map[string]string{"WASMKUBE_LISTEN": "127.0.0.1:2222", "WASMKUBE_ETCD_ENDPOINTS": "http://c:2379"},
			args: []string{"--config", cfg}, dataDir: "/from/file", listen: "127.0.0.1:2222", etcd: []string{"http://c:2379"}, tolerate: 30},
		{name: "flags over env", env: map[string]string{"WASMKUBE_LISTEN": "127.0.0.1:2222"},
			args:    []string{"--config", cfg, "--listen", "127.0.0.1:3333", "--data-dir", "/from/flag", "--etcd-endpoints", "http://d:2379,http://e:2379"},
			dataDir: "/from/flag", listen: "127.0.0.1:3333", etcd: []string{"http://d:2379", "http://e:2379"}, tolerate: 30},
		{name: "defaults", args: []string{"--data-dir", "/d"}, dataDir: "/d", listen: "127.0.0.1:6443", tolerate: 300},
		{name: "data dir required", args: []string{}, wantErr: true},
		{name: "bad log level", args: []string{"--data-dir", "/d", "--log-level", "loud"}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"WASMKUBE_DATA_DIR", "WASMKUBE_LISTEN", "WASMKUBE_ETCD_ENDPOINTS", "WASMKUBE_DEFAULT_TOLERATION_SECONDS", "WASMKUBE_LOG_LEVEL"} {
				t.Setenv(k, c.env[k])
				if c.env[k] == "" {
					os.Unsetenv(k)
				}
			}
			cmd := newServerCmd()
			if err := cmd.Flags().Parse(c.args); err != nil {
				t.Fatal(err)
			}
			opts, _, err := serverOptions(cmd)
			if c.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.DataDir != c.dataDir || opts.Listen != c.listen || !reflect.DeepEqual(opts.EtcdEndpoints, c.etcd) || opts.DefaultTolerationSeconds != c.tolerate {
				t.Fatalf("got %+v", opts)
			}
		})
	}
}
