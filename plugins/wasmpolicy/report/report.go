// Package report writes a component's WasmPolicy status to the API: one WasmPolicyReport
// object per (policy, component instance), written only by that instance, so that a
// change costs each component at most one write and no two components ever write the
// same object (docs/wasmpolicy-status.md says why this and not server-side apply of
// status.components). Sink implements wasmpolicy.StatusSink: Observe only records the
// latest status; a writer goroutine coalesces and writes. Heartbeat keeps the identity
// Lease by which the roll-up controller counts a live API server or scheduler.
package report

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// Labels a report carries.
const (
	// ComponentLabel holds the report's (and an identity Lease's) component.
	ComponentLabel = "policy.wasmkube.io/component"
)

// LoadsPoliciesAnnotation ("true") marks a hollow Node (label wasmkube.io/hollow=true)
// whose simulated kubelet loads the kubelet WasmPolicies and reports on them
// (kubelet/hollow, Options.Policies): the roll-up counts it as a target like a real
// kubelet. A hollow node without it loads nothing and is no policy's target.
const LoadsPoliciesAnnotation = "policy.wasmkube.io/loads-policies"

// Resources of the policy group, for the dynamic client.
var (
	PoliciesResource = policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicies")
	ReportsResource  = policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicyreports")
)

var notName = regexp.MustCompile(`[^a-z0-9.-]+`)

// Name is the name of instance's report on policy: POLICY.COMPONENT.INSTANCE, with the
// instance lowercased and anything a DNS subdomain does not allow replaced by '-'; a name
// that would be longer than 253 characters, or that had to be changed, ends in a hash of
// the original so that two instances never share one.
func Name(policy, component, instance string) string {
	clean := strings.Trim(notName.ReplaceAllString(strings.ToLower(instance), "-"), ".-")
	n := policy + "." + component + "." + clean
	if clean == instance && len(n) <= 253 {
		return n
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(policy + "\x00" + component + "\x00" + instance))
	sum := fmt.Sprintf("-%08x", h.Sum32())
	if len(n) > 253-len(sum) {
		n = strings.TrimRight(n[:253-len(sum)], ".-")
	}
	return n + sum
}

// Transient reports whether a phase is one a component passes through on its way to
// Active or Failed.
func Transient(p policyv1alpha1.Phase) bool {
	return p == policyv1alpha1.PhasePending || p == policyv1alpha1.PhaseFetching
}

// Same reports whether two statuses say the same (the transition time aside).
func Same(a, b policyv1alpha1.ComponentStatus) bool {
	return a.Name == b.Name && a.Component == b.Component && a.ObservedGeneration == b.ObservedGeneration &&
		a.Digest == b.Digest && a.Phase == b.Phase && a.Mode == b.Mode && a.Reason == b.Reason && a.Message == b.Message
}

// Options configure a Sink.
type Options struct {
	// Client reaches the API (required).
	Client dynamic.Interface
	// Component is policyv1alpha1.ComponentAPIServer, ComponentScheduler or
	// ComponentKubelet; Instance the API server's or scheduler's identity or the node's
	// name (both required).
	Component, Instance string
	// Settle is how long a transient phase (Pending, Fetching) must stay current before
	// it is written (default 2s): a swap from a warm cache goes Pending, Fetching, Active
	// within it and costs one write, while a slow fetch still shows as Fetching.
	Settle time.Duration
	// Retry is the delay before a failed write is tried again (default 1s, doubled up
	// to 30s).
	Retry time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Sink records each policy's latest status and writes it to the component's report.
type Sink struct {
	o    Options
	wake chan struct{}

	mu      sync.Mutex
	pending map[string]observed // policy -> latest status not yet written

	// Owned by the writer goroutine.
	stored map[string]stored
}

type observed struct {
	s     policyv1alpha1.ComponentStatus
	since time.Time // when its phase was first observed
	tries int
	next  time.Time // do not try before (after a failed write)
}

type stored struct {
	s  policyv1alpha1.ComponentStatus
	rv string
}

// New makes a Sink; Run writes what it observes.
func New(o Options) (*Sink, error) {
	if o.Client == nil || o.Component == "" || o.Instance == "" {
		return nil, errors.New("report: Options.Client, Component and Instance are required")
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Logger = o.Logger.With("component", "wasmpolicy-report")
	return &Sink{o: o, wake: make(chan struct{}, 1), pending: map[string]observed{}, stored: map[string]stored{}}, nil
}

// Observe records s as the component's status for policy; it never blocks. Only the
// latest status of each policy is kept, so a burst of changes is one write. The sink
// fills in the component, its name and, when unset, the transition time.
func (k *Sink) Observe(policy string, s policyv1alpha1.ComponentStatus) {
	s.Component, s.Name = k.o.Component, k.o.Instance
	now := time.Now()
	k.mu.Lock()
	prev, ok := k.pending[policy]
	since := now
	if ok && prev.s.Phase == s.Phase {
		since = prev.since
	}
	k.pending[policy] = observed{s: s, since: since}
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// Run writes until ctx is done.
func (k *Sink) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := k.flush(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return
		case <-k.wake:
		case <-timer.C:
		}
	}
}

// due splits the pending statuses into those to write now and the time the next one is
// due (zero: none waits). A pure step: the decision of what a tick writes.
func due(pending map[string]observed, settle time.Duration, now time.Time) (ready []string, next time.Time) {
	for p, o := range pending {
		at := o.next
		if Transient(o.s.Phase) {
			if t := o.since.Add(settle); t.After(at) {
				at = t
			}
		}
		if !at.After(now) {
			ready = append(ready, p)
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return ready, next
}

// flush writes every status that is due and returns when the next one is.
func (k *Sink) flush(ctx context.Context) time.Time {
	k.mu.Lock()
	ready, next := due(k.pending, k.o.Settle, time.Now())
	work := make(map[string]observed, len(ready))
	for _, p := range ready {
		work[p] = k.pending[p]
	}
	k.mu.Unlock()
	for p, o := range work {
		err := k.write(ctx, p, o)
		k.mu.Lock()
		cur := k.pending[p]
		if cur.s == o.s && cur.since == o.since { // nothing newer arrived meanwhile
			if err == nil {
				delete(k.pending, p)
			} else {
				cur.tries++
				d := k.o.Retry << min(cur.tries-1, 5)
				cur.next = time.Now().Add(min(d, 30*time.Second))
				k.pending[p] = cur
				if next.IsZero() || cur.next.Before(next) {
					next = cur.next
				}
			}
		} else if next.IsZero() || !next.After(time.Now()) {
			next = time.Now()
		}
		k.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			k.o.Logger.Warn("writing the policy report", "policy", p, "err", err)
		}
	}
	return next
}

// write stores o as the report on policy, unless the report already says the same.
func (k *Sink) write(ctx context.Context, policy string, o observed) error {
	name := Name(policy, k.o.Component, k.o.Instance)
	cli := k.o.Client.Resource(ReportsResource)
	st, known := k.stored[policy]
	if !known {
		// First write since start: what is stored may already say it (a restart).
		u, err := cli.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		default:
			r, err := fromUnstructured(u)
			if err != nil {
				return err
			}
			st, known = stored{s: r.Status, rv: r.ResourceVersion}, true
			k.stored[policy] = st
		}
	}
	s := o.s
	if known && Same(st.s, s) {
		return nil
	}
	if s.LastTransitionTime.IsZero() {
		s.LastTransitionTime = metav1.NewTime(o.since.Truncate(time.Second))
		if known && st.s.Phase == s.Phase {
			s.LastTransitionTime = st.s.LastTransitionTime
		}
	}
	r := &policyv1alpha1.WasmPolicyReport{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicyReport"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ComponentLabel: k.o.Component}},
		Policy:     policy, Status: s,
	}
	if known {
		r.ResourceVersion = st.rv
		u, err := toUnstructured(r)
		if err != nil {
			return err
		}
		out, err := cli.Update(ctx, u, metav1.UpdateOptions{FieldManager: "wasmkube-" + k.o.Component})
		if err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				delete(k.stored, policy) // read it again on the retry
			}
			return err
		}
		k.stored[policy] = stored{s: s, rv: out.GetResourceVersion()}
		return nil
	}
	// A new report is owned by its policy, so the garbage collector deletes it with it.
	pol, err := k.o.Client.Resource(PoliciesResource).Get(ctx, policy, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		delete(k.stored, policy)
		k.o.Logger.Debug("policy gone: no report", "policy", policy)
		return nil
	}
	if err != nil {
		return err
	}
	r.OwnerReferences = []metav1.OwnerReference{{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicy",
		Name: policy, UID: types.UID(pol.GetUID())}}
	u, err := toUnstructured(r)
	if err != nil {
		return err
	}
	out, err := cli.Create(ctx, u, metav1.CreateOptions{FieldManager: "wasmkube-" + k.o.Component})
	if apierrors.IsAlreadyExists(err) {
		delete(k.stored, policy)
		return err // retried as an update
	}
	if err != nil {
		return err
	}
	k.stored[policy] = stored{s: s, rv: out.GetResourceVersion()}
	return nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func fromUnstructured(u *unstructured.Unstructured) (*policyv1alpha1.WasmPolicyReport, error) {
	r := &policyv1alpha1.WasmPolicyReport{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
		return nil, fmt.Errorf("report %s: %w", u.GetName(), err)
	}
	return r, nil
}
