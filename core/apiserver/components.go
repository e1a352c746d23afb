package apiserver

import (
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/authz"
)

// The in-process control-plane components (`wasmkube server` and `up` run the scheduler
// and the controller manager in the API server's process) act as upstream's users
// system:kube-scheduler and system:kube-controller-manager, which the bootstrap
// ClusterRoleBindings of the same names bind to their least-privilege ClusterRoles
// (authz/rbac_bootstrap.go). Their tokens are made at start and held in memory only: they are
// never written to the data dir or to etcd, so nothing outside this process can present
// them, and they change at every restart. Each server of an HA cluster has its own
// tokens for its own components, which talk to it over its own URL.

// The users the scheduler and the controller manager act as when they run with their
// own credential (upstream's names; the bootstrap RBAC of authz binds them).
const (
	SchedulerUser         = authz.SchedulerUser
	ControllerManagerUser = authz.ControllerManagerUser
)

// componentUsers are the identities ComponentRESTConfig issues.
var componentUsers = map[string]bool{authz.SchedulerUser: true, authz.ControllerManagerUser: true}

// ComponentRESTConfig is a client config for an in-process component acting as user
// (SchedulerUser or ControllerManagerUser, group system:authenticated only: what RBAC
// grants it is all it may do). Calls for the same user return the same token.
func (s *Server) ComponentRESTConfig(user string) (*rest.Config, error) {
	if !componentUsers[user] {
		return nil, fmt.Errorf("apiserver: no component credential for user %q (want %s or %s)", user, authz.SchedulerUser, authz.ControllerManagerUser)
	}
	return s.restConfig(s.auth.ComponentToken(user)), nil
}
