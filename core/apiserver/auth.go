package apiserver

import (
	"fmt"
	"strings"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Well-known identities.
const (
	adminUser      = "wasmkube-admin"
	loopbackUser   = "system:apiserver"
	mastersGroup   = "system:masters"
	authedGroup    = "system:authenticated"
	tokensFileName = "tokens.json"
	joinTokenFile  = "join-token"
)

func bearerToken(h string) string {
	const p = "Bearer "
	if len(h) > len(p) && strings.EqualFold(h[:len(p)], p) {
		return strings.TrimSpace(h[len(p):])
	}
	return ""
}

// requestInfo is what authorization and admission need to know about a request.
type requestInfo struct {
	resourceRequest bool
	verb            string // get list watch create update patch delete deletecollection
	res             *resource
	namespace       string
	name            string
	subresource     string
}

// authorize decides the coarse verb/resource question. Object-level limits for kubelets
// (their own Node, pods bound to them) are enforced by admission.NodeRestriction.
func authorize(u admission.UserInfo, ri *requestInfo) (bool, string) {
	if u.InGroup(mastersGroup) {
		return true, ""
	}
	if !ri.resourceRequest {
		return true, "" // discovery, version, openapi, metrics: any authenticated user
	}
	resName := ri.res.gvr.Resource
	if ri.verb == "create" && (resName == "selfsubjectreviews" || resName == "selfsubjectaccessreviews" || resName == "selfsubjectrulesreviews") {
		return true, "" // any authenticated user may ask about itself, as upstream's system:basic-user
	}
	node := admission.NodeName(u)
	if node == "" {
		return false, "user has no permissions"
	}
	switch ri.verb {
	case "get", "list", "watch":
		if resName == "pods" && ri.subresource == "log" {
			return false, fmt.Sprintf("node %q may not read pod logs", node)
		}
		return true, ""
	}
	switch {
	case resName == "nodes" && (ri.subresource == "" || ri.subresource == "status") && ri.verb != "deletecollection":
		return true, ""
	case resName == "leases" && ri.verb != "deletecollection":
		return true, ""
	case resName == "pods" && ri.subresource == "status" && (ri.verb == "update" || ri.verb == "patch"):
		return true, ""
	case resName == "pods" && ri.subresource == "" && ri.verb == "delete":
		return true, ""
	case resName == "events" && (ri.verb == "create" || ri.verb == "update" || ri.verb == "patch"):
		return true, ""
	case resName == "tokenreviews" && ri.verb == "create":
		return true, ""
	}
	return false, fmt.Sprintf("node %q may not %s %s", node, ri.verb, subName(resName, ri.subresource))
}

func subName(res, sub string) string {
	if sub == "" {
		return res
	}
	return res + "/" + sub
}
