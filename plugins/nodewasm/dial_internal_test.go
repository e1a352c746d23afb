package nodewasm

import (
	"context"
	"errors"
	"testing"
)

// TestDialerRefusesOtherAddresses: the dial function net/http calls refuses any address
// but the one the call allows, whatever asked for it.
func TestDialerRefusesOtherAddresses(t *testing.T) {
	c := &Call{PodIP: "127.0.0.2"}
	addr, e := c.target(80)
	if e != 0 || addr != "127.0.0.2:80" {
		t.Fatalf("target: %q %d", addr, e)
	}
	dial := c.dialer(addr)
	for _, other := range []string{"127.0.0.1:80", "127.0.0.2:81", "example.com:80", "[::1]:80"} {
		if _, err := dial(context.Background(), "tcp", other); !errors.Is(err, errOtherAddress) {
			t.Errorf("dial %s: %v, want a refusal", other, err)
		}
	}
	if _, err := dial(context.Background(), "udp", addr); !errors.Is(err, errOtherAddress) {
		t.Errorf("udp: %v, want a refusal", err)
	}
	for _, p := range []string{"/", "/a/b?c=d", "/x?u=http://h@y"} {
		if !validPath(p) {
			t.Errorf("%q refused", p)
		}
	}
	for _, p := range []string{"", "a", "//h", "/@h", "/a@b", "/a b", "/a\r\nHost: x", "/#f", `/\h`, "/http://h", "/\x80"} {
		if validPath(p) {
			t.Errorf("%q accepted", p)
		}
	}
}
