// Package storage is wasmkube's etcd-backed object store: the only code that talks to
// etcd. Objects are stored as Kubernetes JSON under /registry/<resource>/<namespace>/<name>
// (cluster-scoped: /registry/<resource>/<name>); an object's resourceVersion is the etcd
// ModRevision of its key, and a list's resourceVersion is the etcd revision it was read at.
//
// Every write is a single etcd transaction with a precondition, so nothing is ever half
// written and concurrent writers resolve through ErrConflict.
package storage

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Errors returned by Interface; test with errors.Is. The API server maps them to
// 404 NotFound, 409 AlreadyExists, 409 Conflict, 410 Gone (Expired), 504 Timeout
// (TooLarge, as upstream does for a resourceVersion the store has not reached yet) and
// 400 BadRequest (Invalid: a malformed resourceVersion or continue token); etcd faults
// that outlast the request's deadline are ErrUnavailable (503) and ErrOutcomeUnknown (500),
// in retry.go.
var (
	ErrNotFound      = errors.New("storage: not found")
	ErrAlreadyExists = errors.New("storage: already exists")
	ErrConflict      = errors.New("storage: resourceVersion conflict")
	ErrExpired       = errors.New("storage: resourceVersion too old (compacted)")
	ErrTooLarge      = errors.New("storage: resourceVersion is newer than the store")
	ErrInvalid       = errors.New("storage: invalid request")
)

// Preconditions must hold on the stored object for a Delete or update to proceed.
type Preconditions struct {
	UID             *types.UID
	ResourceVersion *string
}

// Predicate selects objects for List and Watch (label and field selectors compiled by the
// API server). A nil Predicate matches everything.
type Predicate func(obj runtime.Object) bool

// ListOptions for List.
type ListOptions struct {
	// ResourceVersion "" reads the newest state from etcd (a quorum read); "0" reads the
	// watch cache's current state; N reads etcd at exactly N (ErrExpired if compacted),
	// or, with ResourceVersionMatch NotOlderThan and no Limit, the cache once it has
	// reached N (ErrTooLarge if it does not within 3 s). cacheread.go.
	ResourceVersion string
	// ResourceVersionMatch is "" (Exact here), MatchNotOlderThan or MatchExact.
	ResourceVersionMatch string
	// Limit > 0 pages the result; Continue is the token of the previous page.
	Limit    int64
	Continue string
	// Predicate filters the items.
	Predicate Predicate
}

// WatchOptions for Watch.
type WatchOptions struct {
	// ResourceVersion: events after this revision; "" starts with ADDED events for the
	// current state read from etcd (a quorum read), "0" with those of the watch cache's
	// current state (served while etcd has no quorum), then follows changes.
	ResourceVersion string
	Predicate       Predicate
	// AllowBookmarks sends BOOKMARK events (an object of the resource's type whose
	// metadata carries only resourceVersion) at least every minute.
	AllowBookmarks bool
	// IndexValue, for a resource with a watch index (WithWatchIndex), limits the watch to
	// objects whose index value before or after a change equals it (for example the node
	// name of a kubelet's pod watch). It narrows what is queued, not what matches: the
	// Predicate must still select the same objects. Ignored without an index.
	IndexValue string
	// SharedEncodings delivers the objects of changes as *CachingObject: the object
	// together with its serialized forms, computed once per encoder for all the
	// watchers of the event instead of once per watcher (the API server's watch
	// handler encodes each event once per content type). The objects of the initial
	// state and of bookmarks are plain.
	SharedEncodings bool
}

// UpdateFunc computes the new object from the current one. Returning an error aborts the
// update with that error. It may be called more than once when a concurrent write races.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// Interface stores one resource (for example pods). Keys passed to it are full etcd keys
// made with Key; prefixes end with "/".
type Interface interface {
	// Create stores obj at key if the key is absent; returns the stored object with its
	// resourceVersion set. obj itself is prepared for storage and returned, so the caller
	// must not use it concurrently.
	Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error)
	// Get reads the object at key.
	Get(ctx context.Context, key string) (runtime.Object, error)
	// GuaranteedUpdate reads key, checks preconditions, calls tryUpdate and writes the
	// result with a compare-and-swap on the revision it read, retrying tryUpdate on races.
	// If preconditions.ResourceVersion is set and stale, returns ErrConflict without
	// retrying. Writing an unchanged object is a no-op that keeps the resourceVersion.
	GuaranteedUpdate(ctx context.Context, key string, pre *Preconditions, tryUpdate UpdateFunc) (runtime.Object, error)
	// Delete removes key if preconditions hold; returns the last stored object.
	Delete(ctx context.Context, key string, pre *Preconditions) (runtime.Object, error)
	// List returns a list object (the resource's List type) of the items under prefix.
	List(ctx context.Context, prefix string, opts ListOptions) (runtime.Object, error)
	// Watch streams changes under prefix. An object leaving the predicate is delivered as
	// DELETED, entering it as ADDED. Watches of one resource share one etcd watch, and
	// the objects in events are shared between watchers: treat them as read-only.
	// A watcher that falls too far behind has its result channel closed; it re-watches
	// from the last resourceVersion it saw.
	Watch(ctx context.Context, prefix string, opts WatchOptions) (watch.Interface, error)
	// Count returns the number of objects under prefix.
	Count(ctx context.Context, prefix string) (int64, error)
}

// Key returns the etcd key of an object of resource in namespace (empty for
// cluster-scoped resources).
func Key(resource, namespace, name string) string {
	if namespace == "" {
		return "/registry/" + resource + "/" + name
	}
	return "/registry/" + resource + "/" + namespace + "/" + name
}

// Prefix returns the key prefix of all objects of resource in namespace, or of every
// namespace when namespace is empty.
func Prefix(resource, namespace string) string {
	if namespace == "" {
		return "/registry/" + resource + "/"
	}
	return "/registry/" + resource + "/" + namespace + "/"
}

// CachedGetter is implemented by the stores of Backend.ForResource: Get with upstream's
// resourceVersion semantics. "" is a quorum read from etcd (Get); "0" reads the watch
// cache's current state and N the cache once it has reached N, without an etcd round
// trip, so these reads are served while etcd has no quorum.
type CachedGetter interface {
	GetCached(ctx context.Context, key, resourceVersion string) (runtime.Object, error)
}

// RawLister is implemented by the stores of Backend.ForResource: List without decoding,
// for a caller that keeps decoded objects of its own (see store.ListRaw).
type RawLister interface {
	ListRaw(ctx context.Context, prefix string, opts ListOptions, visit func(key string, value []byte, rev int64) (bool, error)) (metav1.ListMeta, error)
}
