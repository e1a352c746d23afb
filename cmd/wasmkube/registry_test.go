package main

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"testing"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"os"
)

// The hosts of `up --nodes N` reach up's registry on the hosts' bridge, at its port.
func TestRegistryOnHosts(t *testing.T) {
	gw := netip.MustParseAddr("172.30.0.1")
	for listen, want := range map[string]string{
		"127.0.0.1:5000":  "172.30.0.1:5000",
		"localhost:27950": "172.30.0.1:27950",
		"0.0.0.0:5000":    "", // already on every address
		"172.30.0.1:5000": "",
	} {
		got, err := registryOnHosts(listen, gw)
		if err != nil || got != want {
			t.Errorf("registryOnHosts(%q) = %q, %v; want %q", listen, got, err, want)
		}
	}
	if _, err := registryOnHosts("5000", gw); err == nil {
		t.Error("a --registry without a port was accepted")
	}
}

// One registry on two addresses is one store: a module pushed through one is pulled by
// tag through the other (as the hosts pull what was pushed on loopback), over plain HTTP
// only when that address is listed as insecure (go-containerregistry speaks plain HTTP
// unasked only to localhost and 127.0.0.1, so 127.0.0.2 stands for the hosts' bridge).
func TestRegistryServesOneStoreOnEveryAddress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs, err := startRegistry(ctx, t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)), "127.0.0.1:0", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 2 {
		t.Fatalf("listening on %v", addrs)
	}
	file := wasmbuild.WAT(t, "wasm-examples/wat/drain-filter/drain-filter.wat")
	if out, err := runCLI(t, "plugin", "push", file, addrs[0]+"/policies/drain:v1"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	unlisted, err := wasmoci.Open(moduleCache(t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unlisted.Pull(ctx, addrs[1]+"/policies/drain:v1", wasmoci.PullIfNotPresent); err == nil {
		t.Fatalf("pulled over plain HTTP from %s, which is not listed as insecure", addrs[1])
	}
	s, err := wasmoci.Open(moduleCache(t.TempDir(), []string{addrs[1]}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Pull(ctx, addrs[1]+"/policies/drain:v1", wasmoci.PullIfNotPresent)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(file)
	if string(m.Wasm) != string(want) {
		t.Fatalf("pulled %d bytes through %s, pushed %d through %s", len(m.Wasm), addrs[1], len(want), addrs[0])
	}
	if _, err := startRegistry(ctx, t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)), "127.0.0.1:0", addrs[0]); err == nil {
		t.Error("a registry started on an address in use")
	}
}
