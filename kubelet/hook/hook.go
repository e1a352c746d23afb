// Package hook runs container lifecycle hooks (postStart, preStop). PreStopRunner is the seam
// a wasm preStop plugin implements; Runner is the built-in one for exec, httpGet and sleep.
package hook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// PreStopRunner runs a container's preStop handler; ctx ends with the grace period.
type PreStopRunner interface {
	PreStop(ctx context.Context, t probe.Target, h *v1.LifecycleHandler) error
}

// PostStartRunner runs a container's postStart handler.
type PostStartRunner interface {
	PostStart(ctx context.Context, t probe.Target, h *v1.LifecycleHandler) error
}

// Runner is the built-in PreStopRunner and PostStartRunner.
type Runner struct {
	Runtime runtime.Runtime
	HTTP    *http.Client
}

// NewRunner returns a Runner that execs through rt.
func NewRunner(rt runtime.Runtime) *Runner {
	return &Runner{Runtime: rt, HTTP: &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}}
}

// PreStop implements PreStopRunner.
func (r *Runner) PreStop(ctx context.Context, t probe.Target, h *v1.LifecycleHandler) error {
	return r.run(ctx, t, h)
}

// PostStart implements PostStartRunner.
func (r *Runner) PostStart(ctx context.Context, t probe.Target, h *v1.LifecycleHandler) error {
	return r.run(ctx, t, h)
}

func (r *Runner) run(ctx context.Context, t probe.Target, h *v1.LifecycleHandler) error {
	switch {
	case h.Exec != nil:
		timeout := time.Hour
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		res, err := r.Runtime.ExecSync(ctx, t.ContainerID, h.Exec.Command, timeout)
		if err != nil {
			return fmt.Errorf("exec hook %q: %w", strings.Join(h.Exec.Command, " "), err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("exec hook %q exited with %d: %s", strings.Join(h.Exec.Command, " "), res.ExitCode, strings.TrimSpace(string(res.Stdout)+string(res.Stderr)))
		}
		return nil
	case h.HTTPGet != nil:
		req, err := probe.NewHTTPGetRequest(ctx, t, h.HTTPGet)
		if err != nil {
			return fmt.Errorf("httpGet hook: %w", err)
		}
		resp, err := r.HTTP.Do(req)
		if err != nil {
			return fmt.Errorf("httpGet hook: %w", err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("httpGet hook %s: status %d", req.URL, resp.StatusCode)
		}
		return nil
	case h.Sleep != nil:
		select {
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case h.TCPSocket != nil:
		return errors.New("tcpSocket lifecycle hooks are deprecated and not supported")
	}
	return errors.New("lifecycle handler has no action")
}
