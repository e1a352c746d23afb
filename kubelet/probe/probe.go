// Package probe runs startup, liveness and readiness probes. Prober is the seam: the built-in
// Runner does exec, httpGet and tcpSocket; a wasm probe plugin implements the same interface.
// Tracker and Loop hold the timing and threshold rules, identical for every Prober.
package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// Result of one probe, or the state a Tracker derives from several.
type Result int

const (
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "unknown"
}

// Kind is which probe of a container runs.
type Kind string

const (
	Startup   Kind = "Startup"
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
)

// Target is the container a probe or hook acts on.
type Target struct {
	Pod         *v1.Pod
	Container   *v1.Container
	ContainerID string // runtime id
	PodIP       string
	// Kind is which probe runs (empty for lifecycle hooks): a wasm Prober picks the
	// pod's plugin for this kind.
	Kind Kind
}

// Prober runs one probe once. It returns the result and a human message (used in the
// Unhealthy event); err is for probes that could not run at all.
type Prober interface {
	Probe(ctx context.Context, t Target, p *v1.ProbeHandler) (Result, string, error)
}

// Runner is the built-in Prober.
type Runner struct {
	Runtime runtime.Runtime
	HTTP    *http.Client
}

// NewRunner returns a Runner that execs through rt.
func NewRunner(rt runtime.Runtime) *Runner {
	return &Runner{Runtime: rt, HTTP: &http.Client{
		// Kubernetes probes do not verify certificates and do not follow redirects off-host.
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Probe implements Prober. The timeout is carried by ctx.
func (r *Runner) Probe(ctx context.Context, t Target, h *v1.ProbeHandler) (Result, string, error) {
	switch {
	case h.Exec != nil:
		timeout := time.Hour
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		res, err := r.Runtime.ExecSync(ctx, t.ContainerID, h.Exec.Command, timeout)
		if err != nil {
			if errors.Is(err, runtime.ErrTimeout) || ctx.Err() != nil {
				return Failure, "command timed out", nil
			}
			return Unknown, "", err
		}
		if res.ExitCode != 0 {
			msg := fmt.Sprintf("command %q exited with %d", strings.Join(h.Exec.Command, " "), res.ExitCode)
			if out := strings.TrimSpace(string(res.Stdout) + string(res.Stderr)); out != "" {
				msg += ": " + out
			}
			return Failure, msg, nil
		}
		return Success, "", nil
	case h.HTTPGet != nil:
		return r.httpGet(ctx, t, h.HTTPGet)
	case h.TCPSocket != nil:
		host := h.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		port, err := ResolvePort(h.TCPSocket.Port, t.Container)
		if err != nil {
			return Unknown, "", err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			// The dial error already names the network and address.
			return Failure, err.Error(), nil
		}
		conn.Close()
		return Success, "", nil
	case h.GRPC != nil:
		return Unknown, "", errors.New("grpc probes are not supported by wasmkube's kubelet")
	}
	return Unknown, "", errors.New("probe has no handler")
}

func (r *Runner) httpGet(ctx context.Context, t Target, g *v1.HTTPGetAction) (Result, string, error) {
	req, err := NewHTTPGetRequest(ctx, t, g)
	if err != nil {
		return Unknown, "", fmt.Errorf("httpGet: %w", err)
	}
	req.Header.Set("User-Agent", "kube-probe/1.32")
	resp, err := r.HTTP.Do(req)
	if err != nil {
		// A *url.Error already reads `Get "URL": cause`.
		return Failure, err.Error(), nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return Success, "", nil
	}
	return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode), nil
}

// NewHTTPGetRequest builds the GET of an httpGet probe or lifecycle hook: the host defaults
// to the pod IP, a named port resolves against the container, and an HTTPHeaders entry named
// Host sets the request's Host (net/http ignores a "Host" in Header).
func NewHTTPGetRequest(ctx context.Context, t Target, g *v1.HTTPGetAction) (*http.Request, error) {
	host := g.Host
	if host == "" {
		host = t.PodIP
	}
	port, err := ResolvePort(g.Port, t.Container)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := (&url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}).Parse(path)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", g.Path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, hd := range g.HTTPHeaders {
		if strings.EqualFold(hd.Name, "host") {
			req.Host = hd.Value
		} else {
			req.Header.Add(hd.Name, hd.Value)
		}
	}
	return req, nil
}

// ResolvePort turns a probe's port (number or container port name) into a number.
func ResolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	name := "?"
	if c != nil {
		name = c.Name
	}
	return 0, fmt.Errorf("port %q is not a port of container %s", p.StrVal, name)
}

// Tracker applies successThreshold and failureThreshold to a stream of results.
type Tracker struct {
	SuccessThreshold, FailureThreshold int32
	state                              Result
	successes, failures                int32
}

// NewTracker starts in initial (Failure for readiness and startup, Success for liveness).
func NewTracker(p *v1.Probe, initial Result) *Tracker {
	t := &Tracker{SuccessThreshold: p.SuccessThreshold, FailureThreshold: p.FailureThreshold, state: initial}
	if t.SuccessThreshold < 1 {
		t.SuccessThreshold = 1
	}
	if t.FailureThreshold < 1 {
		t.FailureThreshold = 3
	}
	return t
}

// State is the current derived result.
func (t *Tracker) State() Result { return t.state }

// Observe records one result and reports the derived state and whether it changed. Unknown
// results (the probe could not run) count as neither success nor failure.
func (t *Tracker) Observe(r Result) (Result, bool) {
	switch r {
	case Success:
		t.failures = 0
		t.successes++
		if t.state != Success && t.successes >= t.SuccessThreshold {
			t.state = Success
			return t.state, true
		}
	case Failure:
		t.successes = 0
		t.failures++
		if t.state != Failure && t.failures >= t.FailureThreshold {
			t.state = Failure
			return t.state, true
		}
	}
	return t.state, false
}

// Timing holds a probe's timing fields with Kubernetes' defaults applied.
type Timing struct {
	InitialDelay, Period, Timeout time.Duration
}

// TimingOf applies the defaults: period 10 s, timeout 1 s.
func TimingOf(p *v1.Probe) Timing {
	t := Timing{
		InitialDelay: time.Duration(p.InitialDelaySeconds) * time.Second,
		Period:       time.Duration(p.PeriodSeconds) * time.Second,
		Timeout:      time.Duration(p.TimeoutSeconds) * time.Second,
	}
	if t.Period <= 0 {
		t.Period = 10 * time.Second
	}
	if t.Timeout <= 0 {
		t.Timeout = time.Second
	}
	return t
}

// Loop probes t with p until ctx ends: the first probe at startedAt+initialDelay, then every
// period. onResult is called after every probe with the raw result and message; onChange when
// the tracked state changes. An error from the Prober is reported as Unknown.
func Loop(ctx context.Context, pr Prober, t Target, p *v1.Probe, startedAt time.Time, tr *Tracker,
	onResult func(Result, string), onChange func(Result)) {
	tm := TimingOf(p)
	wait := time.Until(startedAt.Add(tm.InitialDelay))
	for {
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, tm.Timeout)
		r, msg, err := pr.Probe(pctx, t, &p.ProbeHandler)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r, msg = Unknown, err.Error()
		}
		if onResult != nil {
			onResult(r, msg)
		}
		if st, changed := tr.Observe(r); changed && onChange != nil {
			onChange(st)
		}
		wait = tm.Period
	}
}
