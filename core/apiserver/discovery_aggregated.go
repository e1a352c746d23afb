package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// aggregatedContentType is what a client asks for (and gets) with aggregated discovery:
// every group, version and resource in one document, so kubectl needs two requests
// (/api and /apis) instead of one per group version.
const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated reports whether Accept lists apidiscovery.k8s.io/v2 before plain JSON.
func wantsAggregated(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt == "application/json" && params["as"] == "APIGroupDiscoveryList" && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" {
			return true
		}
		if (mt == "application/json" || mt == "*/*") && params["as"] == "" {
			return false
		}
	}
	return false
}

// aggregatedDiscovery is the document for /api (core: true) or /apis.
func aggregatedDiscovery(core bool, served []*registry.Resource) *apidiscoveryv2.APIGroupDiscoveryList {
	list := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	index := map[string]int{}
	for _, r := range served {
		g, v := r.GVR.Group, r.GVR.Version
		if (g == "") != core {
			continue
		}
		gi, ok := index[g]
		if !ok {
			gi = len(list.Items)
			index[g] = gi
			list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g}})
		}
		grp := &list.Items[gi]
		vi := -1
		for i := range grp.Versions {
			if grp.Versions[i].Version == v {
				vi = i
			}
		}
		if vi < 0 {
			grp.Versions = append(grp.Versions, apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
			vi = len(grp.Versions) - 1
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		verbs := []string(r.Verbs())
		rd := apidiscoveryv2.APIResourceDiscovery{
			Resource: r.GVR.Resource, Scope: scope, SingularResource: r.Singular, Verbs: verbs,
			ShortNames: r.ShortNames, Categories: r.Categories,
			ResponseKind: &metav1.GroupVersionKind{Group: g, Version: v, Kind: r.Kind},
		}
		for _, sub := range r.Subresources {
			d := subresourceDiscovery[sub]
			kind := metav1.GroupVersionKind{Group: g, Version: v, Kind: subresourceKind(r, sub)}
			if d.gvk.Kind != "" {
				if d.gvk.Version != "" {
					kind.Group, kind.Version = d.gvk.Group, d.gvk.Version
				}
			}
			rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: sub, ResponseKind: &kind, Verbs: d.verbs})
		}
		grp.Versions[vi].Resources = append(grp.Versions[vi].Resources, rd)
	}
	return list
}

func writeAggregated(w http.ResponseWriter, core bool, served []*registry.Resource) {
	b, err := json.Marshal(aggregatedDiscovery(core, served))
	if err != nil {
		handlers.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", aggregatedContentType)
	w.Header().Set("Vary", "Accept")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
