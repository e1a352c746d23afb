package apiserver

import (
	"net/http"
	"runtime"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// GitVersion is what /version reports: the Kubernetes API level wasmkube serves.
const GitVersion = "v1.32.0-wasmkube"

func versionInfo() version.Info {
	return version.Info{Major: "1", Minor: "32", GitVersion: GitVersion, GitTreeState: "clean",
		GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

// subresourceDiscovery says how a subresource appears in discovery.
var subresourceDiscovery = map[string]struct {
	gvk   schema.GroupVersionKind // empty group/version: the parent's
	verbs metav1.Verbs
}{
	"status":   {verbs: metav1.Verbs{"get", "patch", "update"}},
	"finalize": {verbs: metav1.Verbs{"update"}},
	"binding":  {gvk: schema.GroupVersionKind{Kind: "Binding"}, verbs: metav1.Verbs{"create"}},
	"log":      {verbs: metav1.Verbs{"get"}},
	"eviction": {gvk: schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, verbs: metav1.Verbs{"create"}},
	"scale":    {gvk: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, verbs: metav1.Verbs{"get", "patch", "update"}},
	// proxy's kind is the parent's with ProxyOptions (NodeProxyOptions, PodProxyOptions,
	// ServiceProxyOptions): subresourceKind.
	"proxy": {verbs: metav1.Verbs{"create", "delete", "get", "patch", "update"}},
	// pods/ephemeralcontainers, as upstream (pkg/registry/core/pod/storage's
	// EphemeralContainersREST): GET returns the pod; PUT and PATCH take a pod of which only
	// spec.ephemeralContainers is kept (registry/store.go, updateEphemeral), checked by
	// validation.ValidatePodEphemeralContainersUpdate (additions only). It is authorized as
	// its own subresource, so a role needs pods/ephemeralcontainers to add a debug
	// container; a node credential has no such rule (authz/nodeauth.go). The kubelet starts what
	// is added (kubelet/worker.go). The pods row of the resources table (registry/) lists the
	// subresource.
	"ephemeralcontainers": {verbs: metav1.Verbs{"get", "patch", "update"}},
	// The stream subresources (streaming.go), as upstream's discovery lists them: connect
	// verbs, the options kinds.
	"exec":        {gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}, verbs: metav1.Verbs{"create", "get"}},
	"attach":      {gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodAttachOptions"}, verbs: metav1.Verbs{"create", "get"}},
	"portforward": {gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodPortForwardOptions"}, verbs: metav1.Verbs{"create", "get"}},
}

// subresourceKind is the kind discovery names for sub of r.
func subresourceKind(r *registry.Resource, sub string) string {
	if sub == "proxy" {
		return r.Kind + "ProxyOptions"
	}
	if d := subresourceDiscovery[sub]; d.gvk.Kind != "" {
		return d.gvk.Kind
	}
	return r.Kind
}

func resourceList(gv schema.GroupVersion, served []*registry.Resource) *metav1.APIResourceList {
	l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, r := range served {
		if r.GVR.GroupVersion() != gv {
			continue
		}
		verbs := r.Verbs()
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: r.GVR.Resource, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.Kind,
			Verbs: verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
		for _, sub := range r.Subresources {
			d := subresourceDiscovery[sub]
			kind := subresourceKind(r, sub)
			l.APIResources = append(l.APIResources, metav1.APIResource{
				Name: r.GVR.Resource + "/" + sub, Namespaced: r.Namespaced, Kind: kind, Verbs: d.verbs,
				Group: d.gvk.Group, Version: d.gvk.Version,
			})
		}
	}
	return l
}

func apiGroup(group string, served []*registry.Resource) *metav1.APIGroup {
	var g *metav1.APIGroup
	for _, gv := range groupVersionsOf(served) {
		if gv.Group != group {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		if g == nil {
			g = &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: group, PreferredVersion: v}
		}
		g.Versions = append(g.Versions, v)
	}
	return g
}

// serveDiscovery answers /api, /api/v1, /apis, /apis/<g> and /apis/<g>/<v>. It reports
// false for paths it does not own. /api and /apis answer with the aggregated document
// (apidiscovery.k8s.io/v2) to clients that ask for it, else with the legacy ones.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, path string) bool {
	if r.Method != http.MethodGet {
		return false
	}
	served := withExplorer(s.servedResources()) // the static table, the custom resources (customresources.go), the explorer's
	if (path == "/api" || path == "/apis") && wantsAggregated(r.Header.Get("Accept")) {
		writeAggregated(w, path == "/api", served)
		return true
	}
	switch {
	case path == "/api":
		handlers.WriteJSON(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: s.ln.Addr().String()}}}, handlers.OutJSON)
		return true
	case path == "/api/v1":
		handlers.WriteJSON(w, http.StatusOK, resourceList(schema.GroupVersion{Version: "v1"}, served), handlers.OutJSON)
		return true
	case path == "/apis":
		gl := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		seen := map[string]bool{}
		for _, gv := range groupVersionsOf(served) {
			if gv.Group == "" || seen[gv.Group] {
				continue
			}
			seen[gv.Group] = true
			gl.Groups = append(gl.Groups, *apiGroup(gv.Group, served))
		}
		handlers.WriteJSON(w, http.StatusOK, gl, handlers.OutJSON)
		return true
	}
	parts := strings.Split(strings.TrimPrefix(path, "/apis/"), "/")
	g := apiGroup(parts[0], served)
	if g == nil || parts[0] == "" {
		handlers.WriteError(w, errNotFoundPath)
		return true
	}
	if len(parts) == 1 {
		handlers.WriteJSON(w, http.StatusOK, g, handlers.OutJSON)
		return true
	}
	l := resourceList(schema.GroupVersion{Group: parts[0], Version: parts[1]}, served)
	if len(l.APIResources) == 0 {
		handlers.WriteError(w, errNotFoundPath)
		return true
	}
	handlers.WriteJSON(w, http.StatusOK, l, handlers.OutJSON)
	return true
}
