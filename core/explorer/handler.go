package explorer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// Access is one authorization question, in RBAC's terms.
type Access struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

// Authorizer answers an Access for the user of the request being served.
type Authorizer func(ctx context.Context, a Access) (allowed bool, reason string)

// Cluster is what the handler reads besides its ring.
type Cluster interface {
	// Pod returns the pod's uid and node (empty while pending); found is false when the
	// pod does not exist (a refused create still has records).
	Pod(ctx context.Context, namespace, name string) (uid, node string, found bool, err error)
	// NodeRecords returns the records a node's kubelet holds, read through the node
	// proxy as logs are.
	NodeRecords(ctx context.Context, node string) ([]explorerv1.Record, error)
}

// Handler serves explorer.wasmkube.io/v1alpha1 below explorerv1.PathPrefix from a ring.
// The API server mounts it after authentication; every answer is authorized through the
// request's Authorizer as reading the objects the records are about (docs/explorer.md).
type Handler struct {
	Ring    *Ring
	Cluster Cluster
	Log     *slog.Logger
	// Keepalive is the interval of the comments that keep an idle event stream open
	// (30 s when zero).
	Keepalive time.Duration
}

// maxPushBody bounds a pushed RecordList.
const maxPushBody = 16 << 20

// Resources are the group's resources for discovery: name, kind, namespaced.
func Resources() []metav1.APIResource {
	return []metav1.APIResource{
		{Name: explorerv1.ResourcePods, SingularName: "pod", Namespaced: true, Kind: "PodDecisions", Verbs: metav1.Verbs{"get", "list", "watch"}},
		{Name: explorerv1.ResourceRecords, SingularName: "record", Namespaced: true, Kind: "Record", Verbs: metav1.Verbs{"create", "get", "list", "watch"}},
		{Name: explorerv1.ResourcePolicies, SingularName: "policy", Kind: "PolicyDecisions", Verbs: metav1.Verbs{"get", "list", "watch"}},
		{Name: explorerv1.ResourceNodes, SingularName: "node", Kind: "NodeDecisions", Verbs: metav1.Verbs{"get"}},
	}
}

// Serve answers one request below explorerv1.PathPrefix for the caller authorize asks about.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, authorize Authorizer) {
	rq := &request{h: h, w: w, r: r, ctx: r.Context(), authorize: authorize, cache: map[Access]bool{}}
	if err := rq.route(); err != nil {
		writeError(w, err)
	}
}

// request is one call: its authorizations are asked once per distinct question.
type request struct {
	h         *Handler
	w         http.ResponseWriter
	r         *http.Request
	ctx       context.Context
	authorize Authorizer
	cache     map[Access]bool
}

var errNotFound = apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "the server could not find the requested resource", 0, false)

func (rq *request) route() error {
	rest := strings.Trim(strings.TrimPrefix(rq.r.URL.Path, explorerv1.PathPrefix), "/")
	p := strings.Split(rest, "/")
	ns := ""
	if len(p) >= 3 && p[0] == "namespaces" && p[1] != "" {
		ns, p = p[1], p[2:]
	}
	if rq.r.Method == http.MethodPost {
		if ns == "" && len(p) == 1 && p[0] == explorerv1.ResourceRecords {
			return rq.push()
		}
		return apierrors.NewMethodNotSupported(schema.GroupResource{Group: explorerv1.GroupName, Resource: p[0]}, "post")
	}
	if rq.r.Method != http.MethodGet {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Group: explorerv1.GroupName, Resource: p[0]}, strings.ToLower(rq.r.Method))
	}
	switch {
	case ns != "" && len(p) == 1 && p[0] == explorerv1.ResourcePods:
		return rq.listPods(ns)
	case ns != "" && len(p) == 2 && p[0] == explorerv1.ResourcePods:
		return rq.pod(ns, p[1])
	case len(p) == 1 && p[0] == explorerv1.ResourceRecords:
		return rq.records(ns)
	case ns == "" && len(p) == 2 && p[0] == explorerv1.ResourceRecords:
		return rq.record(p[1])
	case ns == "" && len(p) == 1 && p[0] == explorerv1.ResourcePolicies:
		return rq.policies("")
	case ns == "" && len(p) == 2 && p[0] == explorerv1.ResourcePolicies:
		return rq.policies(p[1])
	case ns == "" && len(p) == 2 && p[0] == explorerv1.ResourceNodes:
		return rq.node(p[1])
	}
	return errNotFound
}

// can asks the authorizer once per distinct question.
func (rq *request) can(a Access) bool {
	if ok, seen := rq.cache[a]; seen {
		return ok
	}
	ok, _ := rq.authorize(rq.ctx, a)
	rq.cache[a] = ok
	return ok
}

// must is can with a 403 naming the question.
func (rq *request) must(a Access) error {
	ok, why := rq.authorize(rq.ctx, a)
	if ok {
		rq.cache[a] = true
		return nil
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	msg := fmt.Sprintf("cannot %s resource %q in API group %q", a.Verb, res, a.Group)
	if a.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", a.Namespace)
	}
	msg += ": the decision explorer shows records only to who may read the objects they are about"
	if why != "" {
		msg += " (" + why + ")"
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.Group, Resource: res}, a.Name, errors.New(msg))
}

// AccessOf is the question that decides whether a user may see rec: verb is get or
// list (a list asks about the namespace, not the object, as RBAC does).
func AccessOf(rec *explorerv1.Record, verb string) Access {
	name := func(n string) string {
		if verb == "get" {
			return n
		}
		return ""
	}
	switch {
	case rec.SchedulingAttempt != nil:
		p := rec.SchedulingAttempt.Pod
		return Access{Verb: verb, Resource: "pods", Namespace: p.Namespace, Name: name(p.Name)}
	case rec.HookRun != nil:
		p := rec.HookRun.Pod
		return Access{Verb: verb, Resource: "pods", Namespace: p.Namespace, Name: name(p.Name)}
	case rec.AdmissionRequest != nil:
		a := rec.AdmissionRequest
		return Access{Verb: verb, Group: a.Group, Resource: a.Resource, Namespace: a.Object.Namespace, Name: name(a.Object.Name)}
	case rec.Swap != nil:
		return Access{Verb: verb, Group: "policy.wasmkube.io", Resource: "wasmpolicies", Name: name(rec.Swap.Policy)}
	}
	// A record of an unknown type is shown to those who may read every record.
	return Access{Verb: verb, Group: explorerv1.GroupName, Resource: explorerv1.ResourceRecords}
}

func (rq *request) visible(rec *explorerv1.Record) bool { return rq.can(AccessOf(rec, "list")) }

// ---- filters ----

func aboutPod(rec *explorerv1.Record, ns, name, uid string) bool {
	var ref explorerv1.ObjectRef
	switch {
	case rec.SchedulingAttempt != nil:
		ref = rec.SchedulingAttempt.Pod
	case rec.HookRun != nil:
		ref = rec.HookRun.Pod
	case rec.AdmissionRequest != nil:
		a := rec.AdmissionRequest
		if a.Group != "" || a.Resource != "pods" {
			return false
		}
		ref = a.Object
	default:
		return false
	}
	return ref.Namespace == ns && ref.Name == name && (uid == "" || ref.UID == "" || ref.UID == uid)
}

func inNamespace(rec *explorerv1.Record, ns string) bool {
	if ns == "" {
		return true
	}
	switch {
	case rec.SchedulingAttempt != nil:
		return rec.SchedulingAttempt.Pod.Namespace == ns
	case rec.HookRun != nil:
		return rec.HookRun.Pod.Namespace == ns
	case rec.AdmissionRequest != nil:
		return rec.AdmissionRequest.Object.Namespace == ns
	}
	return false
}

// Involves reports whether rec is about policy (a swap of it, or a decision it took part
// in: an admission policy, a scheduler plugin column, a kubelet hook's handler).
func Involves(rec *explorerv1.Record, policy string) bool {
	switch {
	case rec.Swap != nil:
		return rec.Swap.Policy == policy
	case rec.AdmissionRequest != nil:
		return slices.ContainsFunc(rec.AdmissionRequest.Policies, func(d explorerv1.PolicyDecision) bool { return d.Name == policy })
	case rec.SchedulingAttempt != nil:
		a := rec.SchedulingAttempt
		has := func(p explorerv1.Plugin) bool { return p.Name == policy }
		return slices.ContainsFunc(a.FilterPlugins, has) || slices.ContainsFunc(a.ScorePlugins, has)
	case rec.HookRun != nil:
		return rec.HookRun.Handler == policy
	}
	return false
}

// query is the common list parameters: ?type=, ?limit=, and the watch ones.
type query struct {
	types   []explorerv1.RecordType
	limit   int
	watch   bool
	after   uint64
	hasFrom bool
	timeout time.Duration
}

func (rq *request) query() (query, error) {
	q := rq.r.URL.Query()
	var out query
	for _, t := range q["type"] {
		for _, s := range strings.Split(t, ",") {
			switch rt := explorerv1.RecordType(s); rt {
			case explorerv1.TypeSchedulingAttempt, explorerv1.TypeAdmissionRequest, explorerv1.TypeHookRun, explorerv1.TypeSwap:
				out.types = append(out.types, rt)
			default:
				return out, apierrors.NewBadRequest(fmt.Sprintf("type %q: must be SchedulingAttempt, AdmissionRequest, HookRun or Swap", s))
			}
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return out, apierrors.NewBadRequest(fmt.Sprintf("limit %q: must be a non-negative integer", v))
		}
		out.limit = n
	}
	out.watch = q.Get("watch") == "true" || q.Get("watch") == "1"
	from := q.Get("resourceVersion")
	if id := rq.r.Header.Get("Last-Event-ID"); id != "" {
		from = id
	}
	if from != "" && from != "0" {
		n, err := strconv.ParseUint(from, 10, 64)
		if err != nil {
			return out, apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q: must be a record ID (an unsigned integer)", from))
		}
		out.after, out.hasFrom = n, true
	}
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return out, apierrors.NewBadRequest(fmt.Sprintf("timeoutSeconds %q: must be a non-negative integer", v))
		}
		out.timeout = time.Duration(n) * time.Second
	}
	return out, nil
}

func (q query) wants(rec *explorerv1.Record) bool {
	return len(q.types) == 0 || slices.Contains(q.types, rec.Type)
}

// collect returns the ring's records that keep accepts (newest `limit` of them), and the
// ring's newest ID.
func (rq *request) collect(q query, keep func(*explorerv1.Record) bool) ([]explorerv1.Record, uint64) {
	all, last := rq.h.Ring.All()
	out := make([]explorerv1.Record, 0)
	for i := range all {
		if q.wants(&all[i]) && keep(&all[i]) {
			out = append(out, all[i])
		}
	}
	if q.limit > 0 && len(out) > q.limit {
		out = out[len(out)-q.limit:]
	}
	return out, last
}

// ---- endpoints ----

func (rq *request) records(ns string) error {
	q, err := rq.query()
	if err != nil {
		return err
	}
	keep := func(rec *explorerv1.Record) bool { return inNamespace(rec, ns) && rq.visible(rec) }
	if q.watch {
		return rq.stream(q, keep)
	}
	recs, last := rq.collect(q, keep)
	return writeJSON(rq.w, &explorerv1.RecordList{TypeMeta: typeMeta("RecordList"),
		ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(last, 10)}, Items: recs})
}

func (rq *request) record(id string) error {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("record %q: an ID is an unsigned integer", id))
	}
	var recs []explorerv1.Record
	if n > 0 {
		recs, _, _, _ = rq.h.Ring.Since(n - 1)
	}
	if len(recs) == 0 || recs[0].ID != n {
		return apierrors.NewNotFound(schema.GroupResource{Group: explorerv1.GroupName, Resource: explorerv1.ResourceRecords}, id)
	}
	if err := rq.must(AccessOf(&recs[0], "get")); err != nil {
		return err
	}
	return writeJSON(rq.w, &recs[0])
}

func (rq *request) pod(ns, name string) error {
	if err := rq.must(Access{Verb: "get", Resource: "pods", Namespace: ns, Name: name}); err != nil {
		return err
	}
	q, err := rq.query()
	if err != nil {
		return err
	}
	uid, node, found, err := rq.h.Cluster.Pod(rq.ctx, ns, name)
	if err != nil {
		return err
	}
	// Every record about the pod is the pod's; its admission requests on pods'
	// subresources too, since reading the pod was allowed.
	keep := func(rec *explorerv1.Record) bool { return aboutPod(rec, ns, name, uid) }
	if q.watch {
		return rq.stream(q, keep)
	}
	recs, last := rq.collect(q, keep)
	out := &explorerv1.PodDecisions{TypeMeta: typeMeta("PodDecisions"),
		ObjectMeta:   metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: strconv.FormatUint(last, 10)},
		Node:         node,
		ExplorerPath: PodPagePath(ns, name), Records: recs}
	if found {
		out.UID = types.UID(uid)
	}
	if node != "" && q.wantsType(explorerv1.TypeHookRun) {
		hooks, err := rq.h.Cluster.NodeRecords(rq.ctx, node)
		if err != nil {
			out.KubeletError = err.Error()
		}
		for i := range hooks {
			if hooks[i].HookRun != nil && aboutPod(&hooks[i], ns, name, uid) {
				out.Records = append(out.Records, hooks[i])
			}
		}
		sortByTime(out.Records)
	}
	return writeJSON(rq.w, out)
}

func (q query) wantsType(t explorerv1.RecordType) bool {
	return len(q.types) == 0 || slices.Contains(q.types, t)
}

func (rq *request) listPods(ns string) error {
	if err := rq.must(Access{Verb: "list", Resource: "pods", Namespace: ns}); err != nil {
		return err
	}
	q, err := rq.query()
	if err != nil {
		return err
	}
	keep := func(rec *explorerv1.Record) bool {
		return (rec.SchedulingAttempt != nil || rec.AdmissionRequest != nil && rec.AdmissionRequest.Group == "" && rec.AdmissionRequest.Resource == "pods") && inNamespace(rec, ns)
	}
	if q.watch {
		return rq.stream(q, keep)
	}
	recs, last := rq.collect(query{}, keep)
	out := &explorerv1.PodDecisionsList{TypeMeta: typeMeta("PodDecisionsList"), ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(last, 10)}}
	idx := map[string]int{}
	for i := range recs {
		rec := &recs[i]
		var ref explorerv1.ObjectRef
		if a := rec.SchedulingAttempt; a != nil {
			ref = a.Pod
		} else {
			ref = rec.AdmissionRequest.Object
		}
		j, ok := idx[ref.Name]
		if !ok {
			j = len(out.Items)
			idx[ref.Name] = j
			out.Items = append(out.Items, explorerv1.PodSummary{Pod: explorerv1.ObjectRef{Namespace: ns, Name: ref.Name}})
		}
		s := &out.Items[j]
		s.Records++
		s.Last = rec.Time
		if a := rec.SchedulingAttempt; a != nil {
			s.Pod.UID, s.Attempts, s.Result, s.Node = a.Pod.UID, s.Attempts+1, a.Result, a.Node
		}
	}
	if q.limit > 0 && len(out.Items) > q.limit {
		out.Items = out.Items[len(out.Items)-q.limit:]
	}
	return writeJSON(rq.w, out)
}

func (rq *request) policies(name string) error {
	verb := "list"
	if name != "" {
		verb = "get"
	}
	if err := rq.must(Access{Verb: verb, Group: "policy.wasmkube.io", Resource: "wasmpolicies", Name: name}); err != nil {
		return err
	}
	q, err := rq.query()
	if err != nil {
		return err
	}
	if name != "" {
		keep := func(rec *explorerv1.Record) bool { return Involves(rec, name) && rq.visible(rec) }
		if q.watch {
			return rq.stream(q, keep)
		}
		recs, last := rq.collect(q, keep)
		out := &explorerv1.PolicyDecisions{TypeMeta: typeMeta("PolicyDecisions"),
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: strconv.FormatUint(last, 10)},
			Counts:     Counts(recs, name), Records: recs}
		return writeJSON(rq.w, out)
	}
	if q.watch {
		return rq.stream(q, func(rec *explorerv1.Record) bool { return len(PoliciesOf(rec)) > 0 && rq.visible(rec) })
	}
	recs, last := rq.collect(query{types: q.types}, rq.visible)
	byName := map[string][]explorerv1.Record{}
	var names []string
	for _, rec := range recs {
		for _, p := range PoliciesOf(&rec) {
			if _, ok := byName[p]; !ok {
				names = append(names, p)
			}
			byName[p] = append(byName[p], rec)
		}
	}
	slices.Sort(names)
	out := &explorerv1.PolicyDecisionsList{TypeMeta: typeMeta("PolicyDecisionsList"), ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(last, 10)}}
	for _, n := range names {
		// The list gives counts; a policy's records are at policies/NAME.
		out.Items = append(out.Items, explorerv1.PolicyDecisions{ObjectMeta: metav1.ObjectMeta{Name: n}, Counts: Counts(byName[n], n), Records: []explorerv1.Record{}})
	}
	return writeJSON(rq.w, out)
}

// PoliciesOf names the policies a record is about: the swapped one, the admission
// policies of a request, the wasm plugins of an attempt, a hook run's handler.
func PoliciesOf(rec *explorerv1.Record) []string {
	var out []string
	switch {
	case rec.Swap != nil && rec.Swap.Policy != "":
		out = append(out, rec.Swap.Policy)
	case rec.AdmissionRequest != nil:
		for _, d := range rec.AdmissionRequest.Policies {
			out = append(out, d.Name)
		}
	case rec.SchedulingAttempt != nil:
		for _, cols := range [][]explorerv1.Plugin{rec.SchedulingAttempt.FilterPlugins, rec.SchedulingAttempt.ScorePlugins} {
			for _, p := range cols {
				if p.Wasm != nil && !slices.Contains(out, p.Name) {
					out = append(out, p.Name)
				}
			}
		}
	case rec.HookRun != nil && rec.HookRun.Handler != "":
		out = append(out, rec.HookRun.Handler)
	}
	return out
}

// Counts counts policy's decisions over recs, per component and verdict: admission
// verdicts; Filter verdicts per node and "Scored" nodes; hook outcomes; swap results
// as "Swap<Result>".
func Counts(recs []explorerv1.Record, policy string) []explorerv1.Count {
	type key struct{ c, v string }
	m := map[key]int{}
	var order []key
	add := func(c, v string) {
		k := key{c, v}
		if _, ok := m[k]; !ok {
			order = append(order, k)
		}
		m[k]++
	}
	for i := range recs {
		rec := &recs[i]
		switch {
		case rec.Swap != nil && rec.Swap.Policy == policy:
			add(rec.Component, "Swap"+rec.Swap.Result)
		case rec.AdmissionRequest != nil:
			for _, d := range rec.AdmissionRequest.Policies {
				if d.Name == policy {
					add(explorerv1.ComponentAPIServer, d.Verdict)
				}
			}
		case rec.SchedulingAttempt != nil:
			a := rec.SchedulingAttempt
			fi := slices.IndexFunc(a.FilterPlugins, func(p explorerv1.Plugin) bool { return p.Name == policy })
			si := slices.IndexFunc(a.ScorePlugins, func(p explorerv1.Plugin) bool { return p.Name == policy })
			for _, row := range a.Matrix {
				if fi >= 0 && fi < len(row.Filter) && row.Filter[fi].Verdict != explorerv1.VerdictNotRun {
					add(explorerv1.ComponentScheduler, row.Filter[fi].Verdict)
				}
				if si >= 0 && si < len(row.Scores) {
					add(explorerv1.ComponentScheduler, "Scored")
				}
			}
		case rec.HookRun != nil && rec.HookRun.Handler == policy:
			add(explorerv1.ComponentKubelet, rec.HookRun.Outcome)
		}
	}
	out := make([]explorerv1.Count, 0, len(order))
	for _, k := range order {
		out = append(out, explorerv1.Count{Component: k.c, Verdict: k.v, Count: m[k]})
	}
	return out
}

func (rq *request) node(name string) error {
	if err := rq.must(Access{Verb: "get", Resource: "nodes", Subresource: "proxy", Name: name}); err != nil {
		return err
	}
	q, err := rq.query()
	if err != nil {
		return err
	}
	if q.watch {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Group: explorerv1.GroupName, Resource: explorerv1.ResourceNodes}, "watch")
	}
	recs, err := rq.h.Cluster.NodeRecords(rq.ctx, name)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("node %s: its kubelet's decision records: %v", name, err))
	}
	kept := recs[:0]
	for _, rec := range recs {
		if q.wants(&rec) {
			kept = append(kept, rec)
		}
	}
	if q.limit > 0 && len(kept) > q.limit {
		kept = kept[len(kept)-q.limit:]
	}
	return writeJSON(rq.w, &explorerv1.NodeDecisions{TypeMeta: typeMeta("NodeDecisions"), ObjectMeta: metav1.ObjectMeta{Name: name}, Records: kept})
}

// push takes a component's records (the scheduler's) into the ring.
func (rq *request) push() error {
	if err := rq.must(Access{Verb: "create", Group: explorerv1.GroupName, Resource: explorerv1.ResourceRecords}); err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(rq.r.Body, maxPushBody+1))
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("RecordList: reading the body: %v", err))
	}
	if len(body) > maxPushBody {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("RecordList: more than %d bytes: push fewer records at a time", maxPushBody))
	}
	var list explorerv1.RecordList
	if err := json.Unmarshal(body, &list); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("RecordList: %v", err))
	}
	if err := ValidateRecords(list.Items); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	rq.h.Ring.Append(list.Items...)
	rq.w.WriteHeader(http.StatusNoContent)
	return nil
}

// ValidateRecords checks that each record carries the field its type names, and a
// component.
func ValidateRecords(recs []explorerv1.Record) error {
	for i := range recs {
		rec := &recs[i]
		set := map[explorerv1.RecordType]bool{
			explorerv1.TypeSchedulingAttempt: rec.SchedulingAttempt != nil,
			explorerv1.TypeAdmissionRequest:  rec.AdmissionRequest != nil,
			explorerv1.TypeHookRun:           rec.HookRun != nil,
			explorerv1.TypeSwap:              rec.Swap != nil,
		}
		n := 0
		for _, v := range set {
			if v {
				n++
			}
		}
		ok, known := set[rec.Type]
		switch {
		case !known:
			return fmt.Errorf("RecordList items[%d].type: %q is not SchedulingAttempt, AdmissionRequest, HookRun or Swap", i, rec.Type)
		case !ok || n != 1:
			return fmt.Errorf("RecordList items[%d]: a record of type %s carries exactly its own field (%s)", i, rec.Type, fieldOf(rec.Type))
		case rec.Component == "":
			return fmt.Errorf("RecordList items[%d].component: required (scheduler, apiserver or kubelet)", i)
		}
	}
	return nil
}

func fieldOf(t explorerv1.RecordType) string {
	s := string(t)
	return strings.ToLower(s[:1]) + s[1:]
}

// ---- watch ----

// stream sends records as a watch (one JSON WatchEvent per line), or as server-sent
// events when the client accepts text/event-stream. Without a resourceVersion it
// starts with the records the ring holds, as a Kubernetes watch starts with ADDED
// events for the existing objects.
func (rq *request) stream(q query, keep func(*explorerv1.Record) bool) error {
	_, _, _, gone := rq.h.Ring.Since(q.after)
	if q.hasFrom && gone {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (the ring no longer holds the records after it: list again)", q.after))
	}
	sse := strings.Contains(rq.r.Header.Get("Accept"), "text/event-stream")
	h := rq.w.Header()
	if sse {
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
	} else {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Transfer-Encoding", "chunked")
	rq.w.WriteHeader(http.StatusOK)
	flusher, _ := rq.w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	ctx := rq.ctx
	if q.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, q.timeout)
		defer cancel()
	}
	ka := rq.h.Keepalive
	if ka <= 0 {
		ka = 30 * time.Second
	}
	tick := time.NewTicker(ka)
	defer tick.Stop()
	after := q.after
	for {
		recs, last, changed, gone := rq.h.Ring.Since(after)
		if gone {
			// The client read too slowly: the ring overwrote what it had not sent.
			st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (the watch fell behind the ring: list again)", after)).ErrStatus
			st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			b, _ := json.Marshal(map[string]any{"type": "ERROR", "object": st})
			if sse {
				fmt.Fprintf(rq.w, "event: ERROR\ndata: %s\n\n", b)
			} else {
				fmt.Fprintf(rq.w, "%s\n", b)
			}
			flush()
			return nil
		}
		for i := range recs {
			if !q.wants(&recs[i]) || !keep(&recs[i]) {
				continue
			}
			var err error
			if sse {
				var b []byte
				b, err = json.Marshal(&recs[i])
				if err == nil {
					_, err = fmt.Fprintf(rq.w, "id: %d\nevent: ADDED\ndata: %s\n\n", recs[i].ID, b)
				}
			} else {
				var b []byte
				b, err = json.Marshal(&explorerv1.WatchEvent{Type: "ADDED", Object: recs[i]})
				if err == nil {
					_, err = fmt.Fprintf(rq.w, "%s\n", b)
				}
			}
			if err != nil {
				return nil // the client went away
			}
		}
		after = last
		flush()
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C:
			if sse {
				if _, err := io.WriteString(rq.w, ": keepalive\n\n"); err != nil {
					return nil
				}
				flush()
			}
		}
	}
}

// ---- output ----

// KubeletRecordsPath is where a kubelet serves its records (a RecordList) to the API
// server's node proxy.
const KubeletRecordsPath = "/explorer/records"

// PodPagePath is the page of a pod, relative to the server's root.
func PodPagePath(ns, name string) string { return "/explorer/pods/" + ns + "/" + name }

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{Kind: kind, APIVersion: explorerv1.APIVersion}
}

func writeJSON(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
	return nil
}

func writeError(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	var st metav1.Status
	if errors.As(err, &se) {
		st = se.Status()
	} else {
		st = apierrors.NewInternalError(err).ErrStatus
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	b, _ := json.Marshal(&st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(b)
}

func sortByTime(recs []explorerv1.Record) {
	slices.SortStableFunc(recs, func(a, b explorerv1.Record) int { return a.Time.Time.Compare(b.Time.Time) })
}
