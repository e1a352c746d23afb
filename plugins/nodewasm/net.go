package nodewasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// Linux errno values of docs/abi.md section 4.7 (the functions return them negated).
const (
	errEIO          int32 = 5
	errEACCES       int32 = 13
	errEINVAL       int32 = 22
	errECONNRESET   int32 = 104
	errETIMEDOUT    int32 = 110
	errECONNREFUSED int32 = 111
	errEHOSTUNREACH int32 = 113
)

// maxBody is the most of a response body the guest can read, and the largest POST body.
const maxBody = 64 << 10

// errOtherAddress is a connection the dialer refused because it was not to the pod.
var errOtherAddress = errors.New("nodewasm: connection to an address other than the pod's refused")

// target returns the one address the call may connect to for port, or an errno.
func (c *Call) target(port int32) (string, int32) {
	if port < 1 || port > 65535 {
		return "", errEINVAL
	}
	ip, err := netip.ParseAddr(c.PodIP)
	if c.PodIP == "" || err != nil {
		return "", errEACCES
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)).String(), 0
}

// dialer connects to allowed only: the address is fixed by the call, not by what a URL or
// a redirect names, and ControlContext checks again the address the socket is about to
// connect to, so no code path of net/http can reach another one.
func (c *Call) dialer(allowed string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	to := allowed
	if c.dial != "" {
		to = c.dial // smoke call: a loopback test server stands in for the pod
	}
	d := &net.Dialer{ControlContext: func(_ context.Context, network, address string, _ syscall.RawConn) error {
		if (network != "tcp4" && network != "tcp6") || address != to {
			return fmt.Errorf("%w: %s %s", errOtherAddress, network, address)
		}
		return nil
	}}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if network != "tcp" || addr != allowed {
			return nil, fmt.Errorf("%w: %s %s", errOtherAddress, network, addr)
		}
		return d.DialContext(ctx, "tcp", to)
	}
}

// tcpConnect opens a connection to the pod's port and closes it at once.
func (c *Call) tcpConnect(ctx context.Context, port int32) int32 {
	addr, e := c.target(port)
	if e != 0 {
		return -e
	}
	conn, err := c.dialer(addr)(ctx, "tcp", addr)
	if err != nil {
		return -errnoOf(ctx, err)
	}
	conn.Close()
	return 0
}

// httpDo sends one request to the pod's port and path on a connection of its own, reads
// at most maxBody of the response and records it for response_body and response_header.
// It returns the status code or a negated errno.
func (c *Call) httpDo(ctx context.Context, method string, port int32, path string, body []byte) int32 {
	addr, e := c.target(port)
	if e != 0 {
		return -e
	}
	if !validPath(path) {
		return -errEINVAL
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	// The path was checked, so the URL's host is the pod's; check anyway: this is the
	// sandbox's wall.
	if err != nil || req.URL.Scheme != "http" || req.URL.Host != addr || req.URL.User != nil || req.URL.Opaque != "" {
		return -errEINVAL
	}
	req.Header.Set("User-Agent", "wasmkube-hook/1")
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:              nil, // never a proxy: the request goes to the pod or nowhere
			DialContext:        c.dialer(addr),
			DisableKeepAlives:  true,
			DisableCompression: true,
			MaxIdleConns:       -1,
		},
		// A 3xx is the guest's to read (Location through response_header), never followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return -errnoOf(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil && ctx.Err() != nil {
		return -errETIMEDOUT
	}
	c.last = &response{header: resp.Header, body: b}
	return int32(resp.StatusCode)
}

// validPath accepts an origin-form request target: a single leading '/', printable ASCII
// without '\\' or '#', and no '@' or "://" before the query, so a path can never name a
// scheme, a host or user info, whatever a URL parser makes of it.
func validPath(p string) bool {
	if len(p) == 0 || p[0] != '/' || (len(p) > 1 && p[1] == '/') {
		return false
	}
	for i := 0; i < len(p); i++ {
		if b := p[i]; b <= ' ' || b >= 0x7f || b == '\\' || b == '#' {
			return false
		}
	}
	pathPart, _, _ := strings.Cut(p, "?")
	return !strings.Contains(pathPart, "@") && !strings.Contains(pathPart, "://")
}

// errnoOf maps a dial or request error to the errno of docs/abi.md section 4.7.
func errnoOf(ctx context.Context, err error) int32 {
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return errETIMEDOUT
	case errors.Is(err, errOtherAddress):
		return errEACCES
	case errors.Is(err, syscall.ECONNREFUSED):
		return errECONNREFUSED
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return errEHOSTUNREACH
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF):
		return errECONNRESET
	case errors.As(err, &ne) && ne.Timeout():
		return errETIMEDOUT
	}
	return errEIO
}

// Errno names a negated errno result of a network function, for logs and tests.
func Errno(v int32) string {
	switch -v {
	case errEIO:
		return "EIO"
	case errEACCES:
		return "EACCES"
	case errEINVAL:
		return "EINVAL"
	case errECONNRESET:
		return "ECONNRESET"
	case errETIMEDOUT:
		return "ETIMEDOUT"
	case errECONNREFUSED:
		return "ECONNREFUSED"
	case errEHOSTUNREACH:
		return "EHOSTUNREACH"
	}
	return strconv.Itoa(int(v))
}
