package apiserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	proxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// pods/exec, pods/attach and pods/portforward are proxied to the pod's kubelet as upstream
// does it (pkg/registry/core/pod/rest/subresources.go):
//   - SPDY (kubectl before 1.30, or with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false) passes
//     through apimachinery's UpgradeAwareHandler to the kubelet;
//   - WebSocket v5.channel.k8s.io, kubectl 1.30+'s default for exec and attach, passes
//     through too: our kubelet serves v5 itself (upstream's API server translates it to
//     SPDY with k8s.io/apiserver's StreamTranslatorHandler because its kubelet cannot);
//   - port-forward's SPDY-over-WebSocket tunnel (kubectl 1.31+'s default,
//     SPDY/3.1+portforward.k8s.io) is unwrapped by its TunnelingHandler.
// The protocols are upstream's code, not ours: kubectl falls back between them on its own.

// streamSubresources are the pod subresources served by a connection upgrade.
var streamSubresources = map[string]bool{"exec": true, "attach": true, "portforward": true}

// Hijack lets an upgraded stream take the connection over.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be upgraded")
	}
	if s.code == 0 {
		s.code = http.StatusSwitchingProtocols
	}
	return hj.Hijack()
}

// kubeletStreams is the transport to kubelets for upgraded streams. It presents a client
// certificate (O=system:masters) from the cluster CA, as upstream's
// --kubelet-client-certificate: an SPDY upgrade made by the stream translator carries no
// header of ours, so a bearer token cannot authenticate it.
type kubeletStreams struct {
	once sync.Once
	tr   *http.Transport
	err  error
}

func (s *Server) streamTransport() (*http.Transport, error) {
	ks := &s.kubeletStreams
	ks.once.Do(func() {
		cert, err := s.pki.KubeletClientCert()
		if err != nil {
			ks.err = fmt.Errorf("kubelet client certificate: %w", err)
			return
		}
		ks.tr = &http.Transport{
			// Kubelets serve with self-signed certificates (a known gap: docs/apiserver.md).
			TLSClientConfig:       &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}, //nolint:gosec
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			ResponseHeaderTimeout: 30 * time.Second,
		}
	})
	return ks.tr, ks.err
}

// streamError answers a failed upgrade as a Status.
type streamError struct{}

func (streamError) Error(w http.ResponseWriter, _ *http.Request, err error) {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		handlers.WriteError(w, se)
		return
	}
	handlers.WriteError(w, apierrors.NewServiceUnavailable(err.Error()))
}

// queryBool reads a kubectl-style boolean query parameter (stdin=true, tty=1).
func queryBool(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, apierrors.NewBadRequest(fmt.Sprintf("query parameter %s: %q is not a boolean", name, v))
	}
	return b, nil
}

// serveStream proxies pods/exec, pods/attach and pods/portforward to the pod's kubelet.
// Both GET (WebSocket) and POST (SPDY) are authorized as create, as upstream does since
// websocket upgrades of these subresources became the default (1.30+).
func (s *Server) serveStream(rq *handlers.Request, st *registry.Store) error {
	ctx := rq.Req.Context()
	sub, name, ns := rq.Info.Subresource, rq.Info.Name, rq.Info.Namespace
	t0 := time.Now()
	obj, err := st.Storage.Get(ctx, st.Key(ns, name))
	if err != nil {
		return st.APIError(err, name)
	}
	pod := obj.(*corev1.Pod)
	q := rq.Query
	kq := url.Values{}
	var path string
	var opts proxy.Options
	if sub == "portforward" {
		for _, p := range q["ports"] {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 || n > 65535 {
				return apierrors.NewBadRequest(fmt.Sprintf("query parameter ports: %q is not a port number (1-65535)", p))
			}
			kq.Add("port", p)
		}
		path = "/portForward/" + ns + "/" + name
	} else {
		container, err := streamContainer(pod, q.Get("container"))
		if err != nil {
			return err
		}
		if p := pod.Status.Phase; p == corev1.PodSucceeded || p == corev1.PodFailed {
			verb := "exec into"
			if sub == "attach" {
				verb = "attach"
			}
			return apierrors.NewBadRequest(fmt.Sprintf("cannot %s a container in a completed pod; current phase is %s", verb, p))
		}
		for _, f := range []struct {
			param, kubelet string
			dst            *bool
		}{{"stdin", "input", &opts.Stdin}, {"stdout", "output", &opts.Stdout}, {"stderr", "error", &opts.Stderr}, {"tty", "tty", &opts.Tty}} {
			if *f.dst, err = queryBool(q, f.param); err != nil {
				return err
			}
			if *f.dst {
				kq.Set(f.kubelet, "1")
			}
		}
		if sub == "exec" {
			cmd := q["command"]
			if len(cmd) == 0 {
				return apierrors.NewBadRequest("query parameter command is required: the command to run in the container")
			}
			for _, c := range cmd {
				kq.Add("command", c)
			}
		}
		if !opts.Stdin && !opts.Stdout && !opts.Stderr {
			return apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
		}
		path = "/" + sub + "/" + ns + "/" + name + "/" + container
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
	}
	nst := s.stores[corev1.SchemeGroupVersion.WithResource("nodes")]
	nobj, err := nst.Storage.Get(ctx, nst.Key("", pod.Spec.NodeName))
	if err != nil {
		return nst.APIError(err, pod.Spec.NodeName)
	}
	addr, err := kubeletAddress(nobj.(*corev1.Node))
	if err != nil {
		return apierrors.NewServiceUnavailable(err.Error())
	}
	tr, err := s.streamTransport()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	loc := &url.URL{Scheme: "https", Host: addr, Path: path, RawQuery: kq.Encode()}
	upgrade := utilproxy.NewUpgradeAwareHandler(loc, tr, false, true, streamError{})
	var h http.Handler
	if sub == "portforward" {
		h = proxy.NewTranslatingHandler(upgrade, proxy.NewTunnelingHandler(upgrade), wsstream.IsWebSocketRequestWithTunnelingProtocol)
	} else {
		// exec and attach pass through whichever protocol kubectl chose: our kubelets
		// speak WebSocket v5 themselves (kubelet/streamws.go), so a v5 session is one
		// connection end to end instead of upstream's translation to SPDY (a second
		// session and a round trip per stream before the command starts); SPDY goes
		// through as upstream's does.
		h = upgrade
	}
	// The user's credentials stay here: the kubelet authenticates the API server by its
	// client certificate.
	r := rq.Req.Clone(s.streamContext(ctx))
	r.Header.Del("Authorization")
	tProxy := time.Now()
	h.ServeHTTP(rq.W, r)
	// Where a stream's time goes, at debug level (docs/benchmarks.md, kubectl exec round trip).
	s.log.Debug("stream", "subresource", sub, "pod", ns+"/"+name, "lookup", tProxy.Sub(t0), "proxied", time.Since(tProxy))
	return nil
}

// streamContext ends a stream's context when the server stops.
func (s *Server) streamContext(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.stoppedCh():
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx
}

// streamContainer is the container an exec or attach names, or the pod's only one.
func streamContainer(pod *corev1.Pod, container string) (string, error) {
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			names := make([]string, len(pod.Spec.Containers))
			for i, c := range pod.Spec.Containers {
				names[i] = c.Name
			}
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names))
		}
		return pod.Spec.Containers[0].Name, nil
	}
	if podHasContainer(pod, container) {
		return container, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
}
