// Package profiling serves Go's runtime profiles at /debug/pprof/ as upstream's
// components do (--profiling, on by default), behind authorization: the API server
// authorizes the path with its own authorizers; the scheduler, the controller manager and
// the kubelet delegate to the API server (a TokenReview for who is asking, a
// SubjectAccessReview for whether they may), as upstream's delegated authorization does.
// A user without get on the nonResourceURL /debug/pprof/* (kubelet: get on nodes/proxy)
// gets 403.
package profiling

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Prefix is where the profiles are served.
const Prefix = "/debug/pprof/"

// Handler serves net/http/pprof's pages under Prefix (index, cmdline, profile, symbol,
// trace, and every named profile: heap, goroutine, allocs, block, mutex, threadcreate).
// It does no authorization of its own.
func Handler() http.Handler { return handler() }

var handler = sync.OnceValue(func() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(Prefix, pprof.Index)
	mux.HandleFunc(Prefix+"cmdline", pprof.Cmdline)
	mux.HandleFunc(Prefix+"profile", pprof.Profile)
	mux.HandleFunc(Prefix+"symbol", pprof.Symbol)
	mux.HandleFunc(Prefix+"trace", pprof.Trace)
	return mux
})

// Attributes says what a request to the profiles asks for, as a SubjectAccessReview
// spec without the user.
type Attributes func(r *http.Request) authzv1.SubjectAccessReviewSpec

// NonResource is the attributes of the scheduler's and controller manager's profiles:
// get on the request's path, a nonResourceURL.
func NonResource(r *http.Request) authzv1.SubjectAccessReviewSpec {
	return authzv1.SubjectAccessReviewSpec{NonResourceAttributes: &authzv1.NonResourceAttributes{Path: r.URL.Path, Verb: "get"}}
}

// NodeProxy is the attributes of a kubelet's profiles, as upstream's kubelet maps every
// path it has no finer subresource for: get on nodes/proxy of the node.
func NodeProxy(node string) Attributes {
	return func(*http.Request) authzv1.SubjectAccessReviewSpec {
		return authzv1.SubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy", Name: node}}
	}
}

// cacheTTL is how long an answer is reused for the same token and attributes, as
// upstream's delegated authorizers cache (10 s allowed, here both).
const cacheTTL = 10 * time.Second

type entry struct {
	status  int // 0: allowed
	reason  string
	expires time.Time
}

// Delegated serves next to callers the API server authenticates (a bearer token, by
// TokenReview) and authorizes (by SubjectAccessReview with attrs): 401 without a valid
// token, 403 naming the missing permission otherwise.
func Delegated(client kubernetes.Interface, attrs Attributes, next http.Handler) http.Handler {
	var mu sync.Mutex
	cache := map[[32]byte]entry{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		spec := attrs(r)
		key := sha256.Sum256([]byte(tok + "\x00" + fmt.Sprint(spec.NonResourceAttributes, spec.ResourceAttributes)))
		mu.Lock()
		e, hit := cache[key]
		mu.Unlock()
		if !hit || time.Now().After(e.expires) {
			e = review(r, client, tok, spec)
			if e.status == http.StatusServiceUnavailable {
				http.Error(w, e.reason, e.status)
				return
			}
			mu.Lock()
			now := time.Now()
			for k, old := range cache {
				if now.After(old.expires) {
					delete(cache, k)
				}
			}
			cache[key] = e
			mu.Unlock()
		}
		if e.status != 0 {
			http.Error(w, e.reason, e.status)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func review(r *http.Request, client kubernetes.Interface, tok string, spec authzv1.SubjectAccessReviewSpec) entry {
	exp := time.Now().Add(cacheTTL)
	tr, err := client.AuthenticationV1().TokenReviews().Create(r.Context(), &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: tok}}, metav1.CreateOptions{})
	if err != nil {
		return entry{status: http.StatusServiceUnavailable, reason: "token review failed: " + err.Error()}
	}
	if !tr.Status.Authenticated {
		return entry{status: http.StatusUnauthorized, reason: "Unauthorized", expires: exp}
	}
	u := tr.Status.User
	spec.User, spec.UID, spec.Groups = u.Username, u.UID, u.Groups
	if len(u.Extra) > 0 {
		spec.Extra = map[string]authzv1.ExtraValue{}
		for k, v := range u.Extra {
			spec.Extra[k] = authzv1.ExtraValue(v)
		}
	}
	sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(r.Context(), &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return entry{status: http.StatusServiceUnavailable, reason: "subject access review failed: " + err.Error()}
	}
	if !sar.Status.Allowed {
		return entry{status: http.StatusForbidden, reason: forbidden(u.Username, spec, sar.Status.Reason), expires: exp}
	}
	return entry{expires: exp}
}

// forbidden is upstream's wording of a refused request.
func forbidden(user string, spec authzv1.SubjectAccessReviewSpec, reason string) string {
	msg := ""
	if n := spec.NonResourceAttributes; n != nil {
		msg = fmt.Sprintf("Forbidden: User %q cannot %s path %q", user, n.Verb, n.Path)
	} else if a := spec.ResourceAttributes; a != nil {
		msg = fmt.Sprintf("Forbidden: User %q cannot %s resource \"%s/%s\" in API group %q", user, a.Verb, a.Resource, a.Subresource, a.Group)
	}
	if reason != "" {
		msg += ": " + reason
	}
	return msg
}
