package sdk

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// The network and sleep functions of the kubelet hooks (docs/abi.md section 4.7). They
// reach only the pod's own IP; the host builds the address, the guest names a port and a
// path. Each waits at most until the call's time limit, and then fails with ETIMEDOUT.

// Errno is the reason a network function failed: a Linux errno, as the host reports it.
// Test for one with errors.Is(err, sdk.ECONNREFUSED).
type Errno int32

// The errnos the host reports (docs/abi.md section 4.7).
const (
	// EIO is any other failure, such as a malformed response.
	EIO Errno = 5
	// EACCES: the pod has no IP yet.
	EACCES Errno = 13
	// EINVAL: a port outside 1..65535, or a path that does not start with a single "/" or
	// that names a scheme or a host.
	EINVAL Errno = 22
	// ECONNRESET: the pod closed the connection before answering.
	ECONNRESET Errno = 104
	// ETIMEDOUT: the call's time limit came first.
	ETIMEDOUT Errno = 110
	// ECONNREFUSED: nothing listens on the port.
	ECONNREFUSED Errno = 111
	// EHOSTUNREACH: the pod's IP cannot be reached.
	EHOSTUNREACH Errno = 113
)

var errnoText = map[Errno]string{
	EIO:          "input/output error",
	EACCES:       "the pod has no IP yet",
	EINVAL:       "invalid port or path",
	ECONNRESET:   "connection reset by peer",
	ETIMEDOUT:    "timed out (the call's time limit)",
	ECONNREFUSED: "connection refused",
	EHOSTUNREACH: "no route to host",
}

func (e Errno) Error() string {
	if s, ok := errnoText[e]; ok {
		return s
	}
	return "errno " + strconv.Itoa(int(e))
}

// Timeout reports whether the call's time limit ended the operation.
func (e Errno) Timeout() bool { return e == ETIMEDOUT }

// ErrUnavailable is the error of a function the current kind of call does not offer
// (HTTPPost in a Probe).
var ErrUnavailable = errors.New("not available in this kind of call")

// netError says which request failed and why; Unwrap gives the Errno or ErrUnavailable.
type netError struct {
	op   string
	port int
	path string
	err  error
}

func (e *netError) Error() string {
	return fmt.Sprintf("%s :%d%s: %v", e.op, e.port, e.path, e.err)
}

func (e *netError) Unwrap() error { return e.err }

// codeError turns a host function's negative answer into the error of op.
func codeError(op string, port int, path string, code int32) error {
	var err error = Errno(-code)
	if code == abi.Unavailable {
		err = ErrUnavailable
	}
	return &netError{op: op, port: port, path: path, err: err}
}

// validPort checks a port before it is narrowed to the ABI's i32, so that a huge int
// cannot wrap around to a valid port.
func validPort(op string, port int, path string) error {
	if port < 1 || port > math.MaxUint16 {
		return &netError{op: op, port: port, path: path, err: EINVAL}
	}
	return nil
}

// Response is the answer to an HTTP request of a kubelet hook. Redirects are not followed:
// a 3xx is a Response whose Header("Location") says where it points.
//
// The host keeps only the call's last response: a Response reads its headers and body
// until the next HTTPGet or HTTPPost of the call, and reads as empty after that.
type Response struct {
	// Status is the HTTP status code.
	Status int
	call   uint64
	seq    uint64
}

// responses tracks the call's last response: seq counts requests, body caches its body.
var responses struct {
	seq      uint64
	haveBody bool
	body     []byte
}

func newResponse(status int32) Response {
	responses.seq++
	responses.haveBody = false
	responses.body = nil
	return Response{Status: int(status), call: abi.Call, seq: responses.seq}
}

// current reports whether r is still the host's last response.
func (r Response) current() bool {
	return r.seq != 0 && r.call == abi.Call && r.seq == responses.seq
}

// Header returns the first value of the response header name ("" when absent).
func (r Response) Header(name string) string {
	if !r.current() {
		return ""
	}
	np, nl := strPtr(name)
	s, _ := readString(func(b unsafe.Pointer, c int32) int32 { return abi.ResponseHeader(np, nl, b, c) })
	return s
}

// Body returns the response body, cut by the host to 64 KiB. It is read from the host
// once; later calls return the same slice.
func (r Response) Body() []byte {
	if !r.current() {
		return nil
	}
	if !responses.haveBody {
		responses.body, _ = readBytes(func(b unsafe.Pointer, c int32) int32 { return abi.ResponseBody(b, c) })
		responses.haveBody = true
	}
	return responses.body
}

// HTTPGet sends GET http://<pod IP>:<port><path>. path must start with a single "/" and
// may carry a query. An HTTP status of any value is a Response; the error is an Errno
// (wrapped with the request) when no response came.
func HTTPGet(port int, path string) (Response, error) {
	if err := validPort("GET", port, path); err != nil {
		return Response{}, err
	}
	pp, pl := strPtr(path)
	return httpResult("GET", port, path, abi.HTTPGet(int32(port), pp, pl))
}

// HTTPPost sends POST http://<pod IP>:<port><path> with body (Content-Type
// application/octet-stream, at most 64 KiB). PreStop only: in a Probe it fails with
// ErrUnavailable.
func HTTPPost(port int, path string, body []byte) (Response, error) {
	if err := validPort("POST", port, path); err != nil {
		return Response{}, err
	}
	pp, pl := strPtr(path)
	bp, bl := bytesPtr(body)
	return httpResult("POST", port, path, abi.HTTPPost(int32(port), pp, pl, bp, bl))
}

func httpResult(op string, port int, path string, code int32) (Response, error) {
	if code < 0 {
		// A failed request ends earlier Responses too, so that a plugin never reads an
		// older request's body believing it is this one's.
		newResponse(0)
		return Response{}, codeError(op, port, path, code)
	}
	return newResponse(code), nil
}

// TCPConnect opens a TCP connection to the pod's IP and port and closes it at once: nil
// means something listens there.
func TCPConnect(port int) error {
	if err := validPort("connect", port, ""); err != nil {
		return err
	}
	if code := abi.TCPConnect(int32(port)); code < 0 {
		return codeError("connect", port, "", code)
	}
	return nil
}

// Sleep waits for d (PreStop only), never past the call's time limit, which for a PreStop
// is what is left of the pod's grace period. It returns false when the limit cut the
// sleep short (return soon: the call's time is up) or when the call is a Probe, where
// sleeping is not offered.
func Sleep(d time.Duration) bool {
	return abi.SleepMS(sleepMillis(d)) == 0
}

// sleepMillis rounds d up to whole milliseconds within the ABI's i32.
func sleepMillis(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	if ms > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(ms)
}
