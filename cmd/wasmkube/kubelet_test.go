package main

import (
	"io"
	"log/slog"
	"net/netip"
	"testing"
)

// TestDefaultNodeIP: without --node-ip the node IP is the --listen address when it names
// one, else an address of this host (the default route's interface, or loopback).
func TestDefaultNodeIP(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for listen, want := range map[string]string{"127.0.0.1:10350": "127.0.0.1", "172.30.64.2:10250": "172.30.64.2"} {
		if got := defaultNodeIP(listen, log); got != want {
			t.Errorf("defaultNodeIP(%q) = %q, want %q", listen, got, want)
		}
	}
	for _, listen := range []string{":10250", "0.0.0.0:10250"} {
		if ip, err := netip.ParseAddr(defaultNodeIP(listen, log)); err != nil || !ip.Is4() || ip.IsUnspecified() {
			t.Errorf("defaultNodeIP(%q) = %v, want an IPv4 address of this host", listen, ip)
		}
	}
}
