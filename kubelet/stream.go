package kubelet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// The kubelet's streaming endpoints, as upstream's kubelet serves them to the API server:
//
//	/exec/<namespace>/<pod>/<container>?command=...&input=1&output=1&error=1&tty=1
//	/attach/<namespace>/<pod>/<container>?input=1&output=1&error=1&tty=1
//	/portForward/<namespace>/<pod>
//
// (an optional pod uid may stand before the container, or after the pod for port-forward).
// The protocols (SPDY with the channel.k8s.io v1-v4 and portforward.k8s.io subprotocols,
// and the older WebSocket ones) are upstream's own server code, k8s.io/cri-streaming: the
// API server translates kubectl's WebSocket v5 and port-forward tunnels to SPDY, as
// upstream's does, so this side speaks what a real kubelet speaks.

const (
	// streamIdleTimeout closes a session without traffic, as upstream's
	// --streaming-connection-idle-timeout (4h).
	streamIdleTimeout = 4 * time.Hour
	// streamCreationTimeout bounds the wait for the client's streams after the upgrade.
	streamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

// streamTarget is the pod (and container) a streaming request names.
type streamTarget struct {
	pod       *v1.Pod
	container string
	id        string // the running container's runtime id
}

// parseStreamPath splits /<verb>/<ns>/<pod>[/<uid>]/<container> (container absent for
// port-forward).
func parseStreamPath(path, verb string, withContainer bool) (ns, pod, uid, container string, err error) {
	parts := strings.Split(strings.Trim(strings.TrimPrefix(path, "/"+verb+"/"), "/"), "/")
	want := 2
	if withContainer {
		want = 3
	}
	switch {
	case len(parts) == want:
	case len(parts) == want+1:
		uid = parts[2]
		parts = append(parts[:2], parts[3:]...)
	default:
		if withContainer {
			return "", "", "", "", fmt.Errorf("path must be /%s/<namespace>/<pod>/<container>", verb)
		}
		return "", "", "", "", fmt.Errorf("path must be /%s/<namespace>/<pod>", verb)
	}
	for _, p := range parts {
		if p == "" {
			return "", "", "", "", fmt.Errorf("path %s has an empty segment", path)
		}
	}
	ns, pod = parts[0], parts[1]
	if withContainer {
		container = parts[2]
	}
	return ns, pod, uid, container, nil
}

// resolveStream finds the pod, and the running container when one is named; it writes
// the error and returns nil when there is none.
func (k *Kubelet) resolveStream(w http.ResponseWriter, r *http.Request, verb string, withContainer bool) *streamTarget {
	ns, name, uid, container, err := parseStreamPath(r.URL.Path, verb, withContainer)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil
	}
	pod := k.podByName(ns, name)
	if pod == nil || (uid != "" && string(pod.UID) != uid) {
		http.Error(w, fmt.Sprintf("pod %s/%s is not on node %s", ns, name, k.opts.NodeName), http.StatusNotFound)
		return nil
	}
	t := &streamTarget{pod: pod, container: container}
	if !withContainer {
		return t
	}
	cs, err := k.rt.ListContainers(r.Context(), string(pod.UID))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil
	}
	attempt := -1
	for _, c := range cs {
		if c.Name == container && c.State == runtime.ContainerRunning && c.Attempt > attempt {
			t.id, attempt = c.ID, c.Attempt
		}
	}
	if t.id == "" {
		if !hasContainer(pod, container) && !hasEphemeralContainer(pod, container) {
			http.Error(w, fmt.Sprintf("container %q is not valid for pod %q", container, pod.Name), http.StatusBadRequest)
		} else {
			http.Error(w, fmt.Sprintf("container %q in pod %q is not running", container, pod.Name), http.StatusBadRequest)
		}
		return nil
	}
	return t
}

func hasEphemeralContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

func (k *Kubelet) streamer(w http.ResponseWriter) runtime.Streamer {
	s, ok := k.rt.(runtime.Streamer)
	if !ok {
		http.Error(w, "this node's container runtime does not serve exec, attach or port-forward", http.StatusNotImplemented)
	}
	return s
}

func (k *Kubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	st := k.streamer(w)
	if st == nil {
		return
	}
	t0 := time.Now()
	t := k.resolveStream(w, r, "exec", true)
	if t == nil {
		return
	}
	k.log.Debug("exec request", "pod", t.pod.Name, "container", t.container, "resolve", time.Since(t0))
	defer func() { k.log.Debug("exec done", "pod", t.pod.Name, "container", t.container, "took", time.Since(t0)) }()
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cmd := r.URL.Query()["command"]
	if len(cmd) == 0 {
		http.Error(w, "query parameter command is required", http.StatusBadRequest)
		return
	}
	a := &streamAdapter{st: st, id: t.id}
	if isWebSocketV5(r) {
		serveWebSocketV5(w, r, opts, func(ctx context.Context, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
			return a.ExecInContainer(ctx, "", "", "", cmd, in, out, errw, tty, resize, 0)
		})
		return
	}
	remotecommand.ServeExec(w, r, a, t.pod.Name, string(t.pod.UID), t.container, cmd,
		opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (k *Kubelet) serveAttach(w http.ResponseWriter, r *http.Request) {
	st := k.streamer(w)
	if st == nil {
		return
	}
	t := k.resolveStream(w, r, "attach", true)
	if t == nil {
		return
	}
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a := &streamAdapter{st: st, id: t.id}
	if isWebSocketV5(r) {
		serveWebSocketV5(w, r, opts, func(ctx context.Context, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
			return a.AttachContainer(ctx, "", "", "", in, out, errw, tty, resize)
		})
		return
	}
	remotecommand.ServeAttach(w, r, a, t.pod.Name, string(t.pod.UID), t.container,
		opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (k *Kubelet) servePortForward(w http.ResponseWriter, r *http.Request) {
	t := k.resolveStream(w, r, "portForward", false)
	if t == nil {
		return
	}
	var opts *portforward.V4Options
	if r.Header.Get("Upgrade") != "" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		var err error
		if opts, err = portforward.NewV4Options(r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	portforward.ServePortForward(w, r, &portForwarder{k: k, pod: t.pod}, t.pod.Name, string(t.pod.UID), opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// streamAdapter runs upstream's Executor and Attacher on the runtime's Streamer.
type streamAdapter struct {
	st runtime.Streamer
	id string
}

func sizes(in <-chan remotecommand.TerminalSize) <-chan runtime.TermSize {
	if in == nil {
		return nil
	}
	out := make(chan runtime.TermSize)
	go func() {
		defer close(out)
		for sz := range in {
			out <- runtime.TermSize{Width: sz.Width, Height: sz.Height}
		}
	}()
	return out
}

func streams(in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) runtime.Streams {
	s := runtime.Streams{TTY: tty, Resize: sizes(resize)}
	// Typed nils must not reach the runtime as non-nil interfaces.
	if in != nil {
		s.Stdin = in
	}
	if out != nil {
		s.Stdout = out
	}
	if errw != nil && !tty {
		s.Stderr = errw
	}
	return s
}

// ExecInContainer implements remotecommand.Executor. A non-zero exit is a
// utilexec.ExitError, which upstream's ServeExec reports as the NonZeroExitCode Status
// with the ExitCode cause that kubectl turns into its own exit code.
func (a *streamAdapter) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	code, err := a.st.Exec(ctx, a.id, cmd, streams(in, out, errw, tty, resize))
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// AttachContainer implements remotecommand.Attacher.
func (a *streamAdapter) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	return a.st.Attach(ctx, a.id, streams(in, out, errw, tty, resize))
}

// portForwarder connects a port-forward stream to a port on the pod's loopback, inside
// the pod's network namespace (as containerd's CRI does), so a server bound to 127.0.0.1
// in the pod is reachable too.
type portForwarder struct {
	k   *Kubelet
	pod *v1.Pod
}

// PortForward implements portforward.PortForwarder.
func (p *portForwarder) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	if port <= 0 || port > 65535 {
		return fmt.Errorf("port-forward to pod %s: invalid port %d", p.pod.Name, port)
	}
	netns := ""
	if !p.pod.Spec.HostNetwork {
		sbs, err := p.k.rt.ListSandboxes(ctx, string(p.pod.UID))
		if err != nil {
			return fmt.Errorf("port-forward to pod %s: %w", p.pod.Name, err)
		}
		for _, sb := range sbs {
			if sb.State == runtime.SandboxReady {
				netns = sb.NetNSPath
			}
		}
		if netns == "" {
			return fmt.Errorf("port-forward to pod %s: the pod has no running sandbox", p.pod.Name)
		}
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	var conn net.Conn
	var err error
	if netns == "" {
		conn, err = (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp4", addr)
	} else {
		conn, err = runtime.DialInNetNS(ctx, netns, "tcp4", addr)
	}
	if err != nil {
		return fmt.Errorf("port-forward to pod %s port %d: %w", p.pod.Name, port, err)
	}
	defer conn.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(stream, conn)
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(time.Second): // the client's side did not end: the stream closes it
	}
	return nil
}
