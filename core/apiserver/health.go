package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// healthCheck is one named check of /readyz and /healthz.
type healthCheck struct {
	name  string
	check func(ctx context.Context) error
}

// healthChecks are the checks that components added to the server (AddReadyzCheck).
type healthChecks struct {
	mu     sync.Mutex
	checks []healthCheck
}

// AddReadyzCheck adds a named check to /readyz and /healthz: while check returns an
// error, they answer 500 and list it as "[-]<name> failed: <error>". /readyz/<name>
// answers for that check alone, ?exclude=<name> leaves it out and ?verbose lists every
// check, as upstream's API server. `wasmkube server` and `wasmkube up` add one for each
// component they run in process (scheduler, controller-manager), so /readyz is not ok
// while one of them has stopped. A name that is already there replaces its check.
func (s *Server) AddReadyzCheck(name string, check func() error) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	c := healthCheck{name: name, check: func(context.Context) error { return check() }}
	for i := range s.health.checks {
		if s.health.checks[i].name == name {
			s.health.checks[i] = c
			return
		}
	}
	s.health.checks = append(s.health.checks, c)
}

// healthChecksFor lists the checks of /livez (ping) or /readyz and /healthz (ping, etcd,
// started, and the added ones), in that order.
func (s *Server) healthChecksFor(kind string) []healthCheck {
	checks := []healthCheck{{name: "ping", check: func(context.Context) error { return nil }}}
	if kind == "livez" {
		return checks
	}
	checks = append(checks,
		healthCheck{name: "etcd", check: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			return s.backend.Ready(ctx)
		}},
		healthCheck{name: "started", check: func(context.Context) error {
			select {
			case <-s.ready:
				return nil
			default:
				return fmt.Errorf("server starting")
			}
		}})
	s.health.mu.Lock()
	checks = append(checks, s.health.checks...)
	s.health.mu.Unlock()
	return checks
}

// serveHealth answers /healthz, /livez and /readyz and their per-check paths
// (/readyz/etcd, /readyz/scheduler ...). Readiness includes etcd and the added checks.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request, path string) {
	kind, only, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	checks := s.healthChecksFor(kind)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if only != "" {
		i := slices.IndexFunc(checks, func(c healthCheck) bool { return c.name == only })
		if i < 0 {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, "no %s check named %q\n", kind, only)
			return
		}
		if err := checks[i].check(r.Context()); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "[-]%s failed: %v\n%s check failed\n", only, err, kind)
			return
		}
		_, _ = w.Write([]byte("ok"))
		return
	}
	exclude := r.URL.Query()["exclude"]
	var out strings.Builder
	failed := false
	for _, c := range checks {
		if slices.Contains(exclude, c.name) {
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := c.check(r.Context()); err != nil {
			failed = true
			fmt.Fprintf(&out, "[-]%s failed: %v\n", c.name, err)
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.name)
	}
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(&out, "%s check failed\n", kind)
		_, _ = w.Write([]byte(out.String()))
		return
	}
	if r.URL.Query().Has("verbose") {
		fmt.Fprintf(&out, "%s check passed\n", kind)
		_, _ = w.Write([]byte(out.String()))
		return
	}
	_, _ = w.Write([]byte("ok"))
}

// isHealthPath is true for /healthz, /livez, /readyz and their per-check paths (one
// more segment), which are served without authentication.
func isHealthPath(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if path == p || strings.HasPrefix(path, p+"/") && !strings.Contains(path[len(p)+1:], "/") {
			return true
		}
	}
	return false
}
