package apiserver

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// The pods/proxy and services/proxy subresources, as upstream's:
//
//	/api/v1/namespaces/N/pods/[https:]NAME[:PORT]/proxy/PATH
//	/api/v1/namespaces/N/services/[https:]NAME[:PORT]/proxy/PATH
//
// authorized as pods/proxy and services/proxy with the method's verb (handler.go). The API
// server dials the pod's IP, or a ready endpoint of the Service from its EndpointSlices
// (PORT a service port's number or name, resolved to the endpoint's port), and passes the
// answer back streamed. It runs on a host, so it reaches the pod IPs of its node directly
// and other nodes' pods through the routes the network backend installs (kubelet/overlay).

// serveProxy answers the proxy subresource of nodes (nodeproxy.go), pods and services.
func (s *Server) serveProxy(rq *handlers.Request, st *registry.Store) error {
	switch st.Resource.GVR.Resource {
	case "pods":
		return s.servePodProxy(rq, st)
	case "services":
		return s.serveServiceProxy(rq, st)
	}
	return s.serveNodeProxy(rq, st)
}

// splitSchemeNamePort splits [scheme:]name[:port] as upstream's
// utilnet.SplitSchemeNamePort: scheme is "http" or "https" (default http).
func splitSchemeNamePort(id string) (scheme, name, port string, ok bool) {
	parts := strings.Split(id, ":")
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		name, port = parts[0], parts[1]
	case 3:
		scheme, name, port = parts[0], parts[1], parts[2]
	default:
		return "", "", "", false
	}
	if scheme == "" {
		scheme = "http"
	}
	if name == "" || (scheme != "http" && scheme != "https") {
		return "", "", "", false
	}
	return scheme, name, port, true
}

// proxyableIP refuses what upstream's IsProxyableIP refuses: addresses of the API server's
// own host (loopback) and link-local ones, so a proxy cannot be pointed at them.
func proxyableIP(ip string) error {
	a := net.ParseIP(ip)
	switch {
	case a == nil:
		return fmt.Errorf("address %q is not an IP", ip)
	case a.IsLoopback(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(), a.IsUnspecified():
		return fmt.Errorf("address %s is not allowed", ip)
	}
	return nil
}

// servePodProxy answers pods/proxy.
func (s *Server) servePodProxy(rq *handlers.Request, st *registry.Store) error {
	ns, id := rq.Info.Namespace, rq.Info.Name
	scheme, name, port, ok := splitSchemeNamePort(id)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	obj, err := st.Storage.Get(rq.Req.Context(), st.Key(ns, name))
	if err != nil {
		return st.APIError(err, name)
	}
	pod := obj.(*corev1.Pod)
	if pod.Status.PodIP == "" {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("pod %s/%s has no IP yet", ns, name))
	}
	if err := proxyableIP(pod.Status.PodIP); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s/%s: %v", ns, name, err))
	}
	host := pod.Status.PodIP
	if port != "" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("pod %s/%s: port %q is not a number", ns, name, port))
		}
		host = net.JoinHostPort(host, port)
	}
	return s.proxyTo(rq, "/api/v1/namespaces/"+ns+"/pods/"+id+"/proxy", scheme, host, fmt.Sprintf("pod %s/%s", ns, name))
}

// serveServiceProxy answers services/proxy through a ready endpoint, picked at random.
func (s *Server) serveServiceProxy(rq *handlers.Request, st *registry.Store) error {
	ctx := rq.Req.Context()
	ns, id := rq.Info.Namespace, rq.Info.Name
	scheme, name, port, ok := splitSchemeNamePort(id)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	obj, err := st.Storage.Get(ctx, st.Key(ns, name))
	if err != nil {
		return st.APIError(err, name)
	}
	svc := obj.(*corev1.Service)
	// A port number names the service port with that number: its name is what the
	// slices carry.
	portName := port
	if n, err := strconv.Atoi(port); err == nil {
		found := false
		for _, sp := range svc.Spec.Ports {
			if int(sp.Port) == n {
				portName, found = sp.Name, true
				break
			}
		}
		if !found {
			return apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, name))
		}
	}
	slices := s.stores[discoveryv1.SchemeGroupVersion.WithResource("endpointslices")]
	list, err := slices.Storage.List(ctx, slices.Prefix(ns), storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("service %s/%s: list endpointslices: %w", ns, name, err))
	}
	var hosts []string
	for _, es := range list.(*discoveryv1.EndpointSliceList).Items {
		if es.Labels[discoveryv1.LabelServiceName] != name {
			continue
		}
		for _, p := range es.Ports {
			pn := ""
			if p.Name != nil {
				pn = *p.Name
			}
			if pn != portName || p.Port == nil {
				continue
			}
			for _, ep := range es.Endpoints {
				if r := ep.Conditions.Ready; r != nil && !*r {
					continue
				}
				for _, a := range ep.Addresses {
					if proxyableIP(a) == nil {
						hosts = append(hosts, net.JoinHostPort(a, strconv.Itoa(int(*p.Port))))
					}
				}
			}
		}
	}
	if len(hosts) == 0 {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	host := hosts[rand.IntN(len(hosts))]
	return s.proxyTo(rq, "/api/v1/namespaces/"+ns+"/services/"+id+"/proxy", scheme, host, fmt.Sprintf("service %s/%s", ns, name))
}

// proxyTo sends the request to scheme://host/<path after prefix>.
func (s *Server) proxyTo(rq *handlers.Request, prefix, scheme, host, what string) error {
	path, ok := strings.CutPrefix(rq.Req.URL.Path, prefix)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("proxy: path %q does not start with %s", rq.Req.URL.Path, prefix))
	}
	if path == "" {
		path = "/"
	}
	target := &url.URL{Scheme: scheme, Host: host, Path: path, RawQuery: rq.Req.URL.RawQuery}
	if err := reverseProxy(rq, target, workloadTransport()); err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("reach %s at %s: %v", what, host, err))
	}
	return nil
}

var (
	workloadTransportOnce sync.Once
	workloadTr            *http.Transport
)

// workloadTransport is the transport to pods: plain HTTP, or HTTPS without verifying the
// pod's certificate (pods have no identity the API server could check), as upstream's
// proxy transport; no client certificate.
func workloadTransport() *http.Transport {
	workloadTransportOnce.Do(func() {
		workloadTr = &http.Transport{
			TLSClientConfig:       &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			ResponseHeaderTimeout: 30 * time.Second,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		}
	})
	return workloadTr
}
