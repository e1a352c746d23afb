package wasmoci

import (
	"io"
	"net"
	"net/http"
	"strings"
)

// guard is the one policy wasmkube adds to go-containerregistry's transport: plain HTTP only
// to loopback and to registries listed as insecure (go-containerregistry would also fall
// back to HTTP for RFC 1918 addresses and *.local names), and manifests no larger than the
// limit (go-containerregistry reads up to 100 MiB of one).
type guard struct {
	next        http.RoundTripper
	insecure    map[string]bool
	maxManifest int64
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.insecure[req.URL.Host] && !isLoopback(req.URL.Hostname()) {
		return nil, &PlainHTTPError{Registry: req.URL.Host}
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/manifests/") {
		return resp, err
	}
	if resp.ContentLength > g.maxManifest {
		resp.Body.Close()
		return nil, &TooLargeError{What: "manifest", Size: resp.ContentLength, Limit: g.maxManifest}
	}
	resp.Body = &capped{rc: resp.Body, left: g.maxManifest, limit: g.maxManifest}
	return resp, nil
}

// capped fails a read past its limit, so a registry that sends no Content-Length cannot
// make the reader hold more than the limit either.
type capped struct {
	rc          io.ReadCloser
	left, limit int64
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, &TooLargeError{What: "manifest", Size: -1, Limit: c.limit}
	}
	return n, err
}

func (c *capped) Close() error { return c.rc.Close() }

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
