package apiserver

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// proxyVerbs authorize nodes/proxy by method, as upstream's RequestInfoFactory does.
var proxyVerbs = map[string]string{
	http.MethodGet: "get", http.MethodHead: "get", http.MethodPost: "create", http.MethodPut: "update",
	http.MethodPatch: "patch", http.MethodDelete: "delete",
}

// serveNodeProxy answers /api/v1/nodes/NAME/proxy/PATH with the node's kubelet's answer to
// PATH (stats/summary, metrics, healthz, containerLogs/...), as upstream's node proxy does:
// authorized as nodes/proxy with the method's verb, sent over the kubelet client
// certificate the log, exec and metrics proxies use (reverseProxy).
func (s *Server) serveNodeProxy(rq *handlers.Request, st *registry.Store) error {
	ctx := rq.Req.Context()
	name := rq.Info.Name
	obj, err := st.Storage.Get(ctx, st.Key("", name))
	if err != nil {
		return st.APIError(err, name)
	}
	addr, err := kubeletAddress(obj.(*corev1.Node))
	if err != nil {
		return apierrors.NewServiceUnavailable(err.Error())
	}
	tr, err := s.streamTransport()
	if err != nil {
		return apierrors.NewServiceUnavailable(err.Error())
	}
	prefix := "/api/v1/nodes/" + name + "/proxy"
	path, ok := strings.CutPrefix(rq.Req.URL.Path, prefix)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("nodes/proxy: path %q does not start with %s", rq.Req.URL.Path, prefix))
	}
	if path == "" {
		path = "/"
	}
	target := &url.URL{Scheme: "https", Host: addr, Path: path, RawQuery: rq.Req.URL.RawQuery}
	if err := reverseProxy(rq, target, tr); err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("reach kubelet of node %s at %s: %v", name, addr, err))
	}
	return nil
}

// reverseProxy sends rq to target over tr and streams the answer (status, headers, body)
// back as the backend wrote it; the caller's credentials for the API server are left out.
// It returns the error that kept the backend from answering, nil when the client went
// away. nodes/proxy, pods/proxy and services/proxy share it.
func reverseProxy(rq *handlers.Request, target *url.URL, tr http.RoundTripper) error {
	var proxyErr error
	p := &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = target.Host
			// The caller's credentials are for the API server, not for the backend.
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
			for k := range pr.Out.Header {
				if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
					pr.Out.Header.Del(k)
				}
			}
		},
		FlushInterval: -1, // stream as the backend writes (logs with follow=true)
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			proxyErr = err
		},
	}
	p.ServeHTTP(rq.W, rq.Req)
	if proxyErr != nil && rq.Req.Context().Err() == nil {
		return proxyErr
	}
	return nil
}
