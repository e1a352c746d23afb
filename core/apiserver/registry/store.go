package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/core/storage"
)

// Store is the generic REST store of one resource: every resource is served by the same
// code, driven by its entry in the resources table.
type Store struct {
	Resource *Resource
	Storage  storage.Interface
	Chain    *admission.Chain
	// Alloc hands out service cluster IPs and node ports (services only).
	Alloc *ServiceAllocator
	// Reads keeps custom objects as served, for lists (custom resources only; customreads.go, handlers/customlist.go).
	Reads *customReads
}

// WriteRequest is what a write needs of its API request: where (namespace and
// subresource from the URL), who (the user admission sees), whether to store at all (dry
// run), and where admission's warnings go (the response's Warning headers).
type WriteRequest struct {
	Namespace   string
	Subresource string
	User        admission.UserInfo
	DryRun      bool
	Warn        func([]string)
	// Manager names the writer in managedFields (fieldmanager.ManagerName: the request's
	// fieldManager, else its user agent's prefix).
	Manager string
	// Owned says the change has recorded managedFields itself (a server-side apply, a
	// scale write): the store does not record the write as an Update too.
	Owned bool
}

const OptimisticLockMsg = "the object has been modified; please apply your changes to the latest version and try again"

func (st *Store) Key(ns, name string) string {
	if !st.Resource.Namespaced {
		ns = ""
	}
	return storage.Key(st.Resource.StorageResource(), ns, name)
}

func (st *Store) Prefix(ns string) string {
	if !st.Resource.Namespaced {
		ns = ""
	}
	return storage.Prefix(st.Resource.StorageResource(), ns)
}

// APIError maps storage errors to API statuses naming the object.
func (st *Store) APIError(err error, name string) error {
	gr := st.Resource.GVR.GroupResource()
	var as apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case errors.As(err, &as):
		return err
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(OptimisticLockMsg))
	case errors.Is(err, storage.ErrInvalid):
		return apierrors.NewBadRequest(fmt.Sprintf("%s: %v", gr.String(), err))
	case errors.Is(err, storage.ErrExpired):
		return apierrors.NewResourceExpired("too old resource version: " + err.Error())
	case errors.Is(err, storage.ErrTooLarge):
		se := apierrors.NewTimeoutError("Too large resource version: "+err.Error(), 1)
		se.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
		return se
	case errors.Is(err, storage.ErrOutcomeUnknown):
		// The one 500 an etcd fault can cause: the write may have happened (its message
		// says so and to read the object). Faults that prove it did not are retried by
		// the store within the request's deadline (docs/storage.md, "etcd faults").
		return apierrors.NewInternalError(fmt.Errorf("%s %q: %w", gr.String(), name, err))
	case errors.Is(err, storage.ErrNoSpace):
		// 507, as WebDAV's Insufficient Storage: the request was fine, the server has no
		// room to store it now; the message names the cause (the disk or etcd's quota).
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInsufficientStorage,
			Reason: metav1.StatusReason("InsufficientStorage"), Message: fmt.Sprintf("%s %q: %v", gr.String(), name, err),
			Details: &metav1.StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource, RetryAfterSeconds: 10}}}
	case errors.Is(err, storage.ErrUnavailable):
		return apierrors.NewServiceUnavailable(fmt.Sprintf("%s %q: %v", gr.String(), name, err))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError(fmt.Sprintf("request for %s %q did not complete: %v", gr.String(), name, err), 1)
	}
	return apierrors.NewInternalError(fmt.Errorf("%s %q: %w", gr.String(), name, err))
}

// Get reads one object with upstream's resourceVersion semantics: without one a quorum
// read from etcd, with one ("0": any; N: not older than N) from the watch cache, which
// serves it while etcd has no quorum.
func (st *Store) Get(ctx context.Context, key, resourceVersion string) (runtime.Object, error) {
	if cg, ok := st.Storage.(storage.CachedGetter); ok && resourceVersion != "" {
		return cg.GetCached(ctx, key, resourceVersion)
	}
	return st.Storage.Get(ctx, key)
}

func (st *Store) attrs(rq *WriteRequest, op admission.Operation, obj, old runtime.Object, name string) *admission.Attributes {
	return &admission.Attributes{
		Operation: op, Kind: st.Resource.GVK(), Resource: st.Resource.GVR, Subresource: rq.Subresource,
		Namespace: rq.Namespace, Name: name, Object: obj, OldObject: old, User: rq.User, DryRun: rq.DryRun,
	}
}

func ObjMeta(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return m
}

// ---- create ----

const generateNameSuffixLen = 5

func generateSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, generateNameSuffixLen)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// setNamespace fills the object's namespace from the URL, or refuses a mismatch.
func (st *Store) setNamespace(m metav1.Object, ns string) error {
	if !st.Resource.Namespaced {
		m.SetNamespace("")
		return nil
	}
	switch m.GetNamespace() {
	case "":
		m.SetNamespace(ns)
	case ns:
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", m.GetNamespace(), ns))
	}
	return nil
}

// PrepareForCreate sets the server-owned metadata and resets what clients may not set.
func (st *Store) PrepareForCreate(obj runtime.Object, now metav1.Time) {
	m := ObjMeta(obj)
	m.SetUID(types.UID(uuid.NewString()))
	m.SetCreationTimestamp(now)
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetManagedFields(nil)
	m.SetSelfLink("")
	if st.Resource.Generation {
		m.SetGeneration(1)
	} else {
		m.SetGeneration(0)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(&o.Spec)}
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
		if !hasFinalizer(o.Spec.Finalizers, corev1.FinalizerKubernetes) {
			o.Spec.Finalizers = append(o.Spec.Finalizers, corev1.FinalizerKubernetes)
		}
	case *corev1.Node:
		// a kubelet registers its node with status: keep it.
	default:
		if st.Resource.HasStatus() {
			clearStatus(obj) // strategy.go: typed or unstructured
		}
	}
}

func hasFinalizer(fs []corev1.FinalizerName, f corev1.FinalizerName) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// Create admits and stores a decoded object.
func (st *Store) Create(ctx context.Context, rq *WriteRequest, obj runtime.Object) (runtime.Object, error) {
	m := ObjMeta(obj)
	if err := st.setNamespace(m, rq.Namespace); err != nil {
		return nil, err
	}
	requested := m.GetManagedFields() // the request's own, or the apply's (Owned)
	st.PrepareForCreate(obj, metav1.Now())
	m.SetManagedFields(requested)
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if generated {
		m.SetName(m.GetGenerateName() + generateSuffix())
	}
	if m.GetName() == "" {
		return nil, apierrors.NewInvalid(st.Resource.GVK().GroupKind(), "", field.ErrorList{
			field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	if !rq.Owned {
		obj = st.trackUpdate(rq, nil, obj)
		m = ObjMeta(obj)
	}
	attrs := st.attrs(rq, admission.Create, obj, nil, m.GetName())
	err := st.admit(ctx, attrs)
	rq.Warn(attrs.Warnings) // admitted or not: a policy's warnings reach the client
	if err != nil {
		return nil, err
	}
	if rq.DryRun {
		return obj, nil
	}
	if svc, ok := obj.(*corev1.Service); ok && st.Alloc != nil {
		var out runtime.Object
		err := st.Alloc.allocate(ctx, st, svc, func() error {
			var err error
			out, err = st.Storage.Create(ctx, st.Key(m.GetNamespace(), m.GetName()), obj)
			return err
		})
		if err != nil {
			return nil, st.APIError(err, m.GetName())
		}
		return out, nil
	}
	for attempt := 0; ; attempt++ {
		out, err := st.Storage.Create(ctx, st.Key(m.GetNamespace(), m.GetName()), obj)
		if err == nil {
			return out, nil
		}
		if generated && errors.Is(err, storage.ErrAlreadyExists) && attempt < 5 {
			m.SetName(m.GetGenerateName() + generateSuffix())
			defaults.Default(obj) // defaults may derive from the name (a namespace's name label)
			continue
		}
		return nil, st.APIError(err, m.GetName())
	}
}

// ---- update ----

// updateMode says which part of the object a write may change.
type updateMode int

const (
	updateMain      updateMode = iota // everything but status (if the resource has /status)
	updateStatus                      // only status
	updateFinalize                    // only spec.finalizers (namespaces/finalize)
	updateEphemeral                   // only spec.ephemeralContainers (pods/ephemeralcontainers)
)

func modeFor(sub string) updateMode {
	switch sub {
	case "status":
		return updateStatus
	case "finalize":
		return updateFinalize
	case "ephemeralcontainers":
		return updateEphemeral
	}
	return updateMain
}

// mergeUpdate computes the object to store from the current one and the client's new
// one, keeping server-owned metadata and the parts the subresource may not change. It is
// pure: cur is not modified.
func (st *Store) mergeUpdate(cur, in runtime.Object, mode updateMode) (runtime.Object, error) {
	cm := ObjMeta(cur)
	im := ObjMeta(in)
	if rv := im.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
		return nil, apierrors.NewConflict(st.Resource.GVR.GroupResource(), cm.GetName(), errors.New(OptimisticLockMsg))
	}
	// A uid in the body is a precondition (the kubelet's status patches carry one, so
	// they never land on a pod recreated under the same name).
	if uid := im.GetUID(); uid != "" && uid != cm.GetUID() {
		return nil, apierrors.NewConflict(st.Resource.GVR.GroupResource(), cm.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, cm.GetUID()))
	}
	var out runtime.Object
	switch mode {
	case updateStatus:
		out = cur.DeepCopyObject()
		copyStatus(out, in)
		if n, ok := out.(*corev1.Node); ok {
			// As upstream's nodeStatusStrategy, which resets only the spec: a
			// nodes/status write carries its labels and annotations, so NodeRestriction
			// judges a kubelet's label change there too (a 403, never silently dropped).
			n.Labels, n.Annotations = ObjMeta(in).GetLabels(), ObjMeta(in).GetAnnotations()
		}
	case updateFinalize:
		ns := cur.DeepCopyObject().(*corev1.Namespace)
		ns.Spec.Finalizers = in.(*corev1.Namespace).Spec.Finalizers
		out = ns
	case updateEphemeral:
		// As upstream's dropNonEphemeralContainerUpdates: everything else is the stored pod's.
		p := cur.DeepCopyObject().(*corev1.Pod)
		p.Spec.EphemeralContainers = in.(*corev1.Pod).Spec.EphemeralContainers
		out = p
	default:
		out = in.DeepCopyObject()
		om := ObjMeta(out)
		om.SetUID(cm.GetUID())
		om.SetCreationTimestamp(cm.GetCreationTimestamp())
		om.SetDeletionTimestamp(cm.GetDeletionTimestamp())
		om.SetDeletionGracePeriodSeconds(cm.GetDeletionGracePeriodSeconds())
		om.SetGeneration(cm.GetGeneration())
		om.SetSelfLink("") // managedFields are in's: the field manager's (fields.go)
		if st.Resource.HasStatus() {
			copyStatus(out, cur)
		}
		if st.Resource.Generation {
			if specChanged(st.Resource, cur, out) {
				om.SetGeneration(cm.GetGeneration() + 1)
			}
		}
		if svc, ok := out.(*corev1.Service); ok {
			keepAllocated(svc, cur.(*corev1.Service))
		}
		if ns, ok := out.(*corev1.Namespace); ok {
			// spec.finalizers changes only through /finalize, as upstream.
			ns.Spec.Finalizers = cur.(*corev1.Namespace).Spec.Finalizers
		}
	}
	if mode != updateMain {
		ObjMeta(out).SetManagedFields(im.GetManagedFields()) // the field manager's, for this subresource
	}
	ObjMeta(out).SetResourceVersion(cm.GetResourceVersion())
	return out, nil
}

// keepAllocated carries a service's allocated cluster IP and node ports over an update
// that leaves them out (as upstream, so `kubectl replace` of a manifest works).
func keepAllocated(svc, old *corev1.Service) {
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
	}
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].NodePort != 0 {
			continue
		}
		for _, op := range old.Spec.Ports {
			if op.Port == svc.Spec.Ports[i].Port && op.Protocol == svc.Spec.Ports[i].Protocol {
				svc.Spec.Ports[i].NodePort = op.NodePort
			}
		}
	}
}

// ErrVanish aborts an update whose result must be deleted instead of stored.
var ErrVanish = errors.New("object is ready to be removed")

// ReadyToVanish reports whether an object marked for deletion has nothing left holding it.
func ReadyToVanish(obj runtime.Object) bool {
	m := ObjMeta(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		return len(ns.Spec.Finalizers) == 0
	}
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		return false // a pod waiting for its kubelet
	}
	return true
}

// Update applies change (which turns the current object into the client's new object)
// under optimistic concurrency, admits the result and stores it. An object whose last
// finalizer goes away while it is being deleted is removed.
func (st *Store) Update(ctx context.Context, rq *WriteRequest, name string, pre *storage.Preconditions,
	change func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	mode := modeFor(rq.Subresource)
	key := st.Key(rq.Namespace, name)
	var last *admission.Attributes
	try := func(cur runtime.Object) (runtime.Object, error) {
		in, err := change(cur)
		if err != nil {
			return nil, err
		}
		im := ObjMeta(in)
		if im.GetName() != "" && im.GetName() != name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", im.GetName(), name))
		}
		im.SetName(name)
		if err := st.setNamespace(im, rq.Namespace); err != nil {
			return nil, err
		}
		if !rq.Owned {
			in = st.trackUpdate(rq, cur, in)
		}
		out, err := st.mergeUpdate(cur, in, mode)
		if err != nil {
			return nil, err
		}
		// A conflict runs the chain again: only the last run's warnings are sent.
		last = st.attrs(rq, admission.Update, out, cur, name)
		if err := st.admit(ctx, last); err != nil {
			return nil, err
		}
		if mode == updateMain && st.Resource.Generation {
			// Judged again on the admitted object: upstream defaults and mutates before
			// its strategy compares the specs, so a write that leaves out only defaulted
			// fields (kubectl apply of a manifest without them) is no new generation.
			gen := ObjMeta(cur).GetGeneration()
			if specChanged(st.Resource, cur, out) {
				gen++
			}
			ObjMeta(out).SetGeneration(gen)
		}
		return out, nil
	}
	defer func() {
		if last != nil {
			rq.Warn(last.Warnings)
		}
	}()
	if rq.DryRun {
		cur, err := st.Storage.Get(ctx, key)
		if err != nil {
			return nil, st.APIError(err, name)
		}
		if err := checkPre(pre, cur, st, name); err != nil {
			return nil, err
		}
		return try(cur)
	}
	var final runtime.Object
	out, err := st.Storage.GuaranteedUpdate(ctx, key, pre, func(cur runtime.Object) (runtime.Object, error) {
		res, err := try(cur.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		if ReadyToVanish(res) {
			final = res
			return nil, ErrVanish
		}
		return res, nil
	})
	if errors.Is(err, ErrVanish) {
		m := ObjMeta(final)
		uid := m.GetUID()
		rv := m.GetResourceVersion()
		if _, derr := st.Storage.Delete(ctx, key, &storage.Preconditions{UID: &uid, ResourceVersion: &rv}); derr != nil && !errors.Is(derr, storage.ErrNotFound) {
			return nil, st.APIError(derr, name)
		}
		return final, nil
	}
	if err != nil {
		return nil, st.APIError(err, name)
	}
	return out, nil
}

func checkPre(pre *storage.Preconditions, cur runtime.Object, st *Store, name string) error {
	if pre == nil {
		return nil
	}
	m := ObjMeta(cur)
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return apierrors.NewConflict(st.Resource.GVR.GroupResource(), name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.GetUID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(st.Resource.GVR.GroupResource(), name,
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// ---- delete ----

// undeletableNamespaces may never be deleted, as upstream.
var undeletableNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

// deletion is what a DELETE does to the current object.
type deletion struct {
	now     bool           // remove the key
	updated runtime.Object // or store this (deletionTimestamp set, finalizers added)
}

// decideDeletion is the pure deletion policy: graceful deletion of bound pods,
// finalizers (including the orphan/foreground ones that propagationPolicy asks for), and
// namespace termination. cur is not modified.
func (st *Store) decideDeletion(cur runtime.Object, opts *metav1.DeleteOptions, now time.Time) (deletion, error) {
	obj := cur.DeepCopyObject()
	m := ObjMeta(obj)
	finalizers := m.GetFinalizers()
	policy := opts.PropagationPolicy
	if policy == nil && opts.OrphanDependents != nil {
		p := metav1.DeletePropagationBackground
		if *opts.OrphanDependents {
			p = metav1.DeletePropagationOrphan
		}
		policy = &p
	}
	if policy != nil && m.GetDeletionTimestamp() == nil {
		switch *policy {
		case metav1.DeletePropagationOrphan:
			finalizers = AddString(finalizers, metav1.FinalizerOrphanDependents)
		case metav1.DeletePropagationForeground:
			finalizers = AddString(finalizers, metav1.FinalizerDeleteDependents)
		case metav1.DeletePropagationBackground:
		default:
			return deletion{}, apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "DeleteOptions"}, "", field.ErrorList{field.NotSupported(
				field.NewPath("propagationPolicy"), *policy, []string{"Foreground", "Background", "Orphan"})})
		}
	}
	m.SetFinalizers(finalizers)

	if ns, ok := obj.(*corev1.Namespace); ok {
		if undeletableNamespaces[ns.Name] {
			return deletion{}, apierrors.NewForbidden(st.Resource.GVR.GroupResource(), ns.Name, fmt.Errorf("this namespace may not be deleted"))
		}
		if len(ns.Spec.Finalizers) == 0 && len(finalizers) == 0 {
			return deletion{now: true}, nil
		}
		if ns.DeletionTimestamp == nil {
			t := metav1.NewTime(now)
			ns.DeletionTimestamp = &t
			var zero int64
			ns.DeletionGracePeriodSeconds = &zero
		}
		ns.Status.Phase = corev1.NamespaceTerminating
		return deletion{updated: ns}, nil
	}

	var grace int64
	if pod, ok := obj.(*corev1.Pod); ok {
		grace = podGrace(pod, opts)
	}
	if grace == 0 && len(finalizers) == 0 {
		return deletion{now: true}, nil
	}
	// Graceful or held by finalizers: mark the object and keep it.
	old := m.GetDeletionGracePeriodSeconds()
	if m.GetDeletionTimestamp() == nil || old == nil || grace < *old {
		t := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
		m.SetDeletionTimestamp(&t)
		g := grace
		m.SetDeletionGracePeriodSeconds(&g)
	}
	if ReadyToVanish(obj) {
		return deletion{now: true}, nil
	}
	return deletion{updated: obj}, nil
}

// podGrace is the grace period of a pod deletion: the request's, else the pod's
// terminationGracePeriodSeconds; 0 for a pod no kubelet runs (unbound or finished).
func podGrace(pod *corev1.Pod, opts *metav1.DeleteOptions) int64 {
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if opts.GracePeriodSeconds != nil {
		grace = *opts.GracePeriodSeconds
	}
	if grace < 0 {
		grace = 0
	}
	return grace
}

func AddString(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Delete removes the object or marks it for deletion. deleted reports whether the key
// is gone.
func (st *Store) Delete(ctx context.Context, rq *WriteRequest, name string, opts *metav1.DeleteOptions) (obj runtime.Object, deleted bool, err error) {
	key := st.Key(rq.Namespace, name)
	var pre *storage.Preconditions
	if p := opts.Preconditions; p != nil {
		pre = &storage.Preconditions{UID: p.UID, ResourceVersion: p.ResourceVersion}
	}
	// A conflict runs the chain again: only the last run's warnings are sent.
	var last *admission.Attributes
	defer func() {
		if last != nil {
			rq.Warn(last.Warnings)
		}
	}()
	for attempt := 0; attempt < 16; attempt++ {
		cur, err := st.Storage.Get(ctx, key)
		if err != nil {
			return nil, false, st.APIError(err, name)
		}
		if err := checkPre(pre, cur, st, name); err != nil {
			return nil, false, err
		}
		last = st.attrs(rq, admission.Delete, nil, cur, name)
		if err := st.Chain.Admit(ctx, last); err != nil {
			return nil, false, err
		}
		d, err := st.decideDeletion(cur, opts, time.Now())
		if err != nil {
			return nil, false, err
		}
		if rq.DryRun {
			if d.now {
				return cur, true, nil
			}
			return d.updated, false, nil
		}
		m := ObjMeta(cur)
		uid, rv := m.GetUID(), m.GetResourceVersion()
		exact := &storage.Preconditions{UID: &uid, ResourceVersion: &rv}
		if d.now {
			out, err := st.Storage.Delete(ctx, key, exact)
			if errors.Is(err, storage.ErrConflict) {
				continue // changed since we read it: decide again
			}
			if err != nil {
				return nil, false, st.APIError(err, name)
			}
			return out, true, nil
		}
		out, err := st.Storage.GuaranteedUpdate(ctx, key, exact, func(runtime.Object) (runtime.Object, error) { return d.updated, nil })
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, false, st.APIError(err, name)
		}
		return out, false, nil
	}
	return nil, false, apierrors.NewConflict(st.Resource.GVR.GroupResource(), name, errors.New("too many concurrent changes while deleting; try again"))
}

// ---- list and selectors ----

// IndexValue is the value of the resource's watch index that a watch with field selector
// fieldSel is filed under: the exact value the selector requires, or "" (unindexed).
func (st *Store) IndexValue(fieldSel string) string {
	if st.Resource.WatchIndex == "" || fieldSel == "" {
		return ""
	}
	fs, err := fields.ParseSelector(fieldSel)
	if err != nil {
		return ""
	}
	v, _ := fs.RequiresExactMatch(st.Resource.WatchIndex)
	return v
}

// Predicate compiles the label and field selectors of a list or watch.
func (st *Store) Predicate(labelSel, fieldSel string) (storage.Predicate, error) {
	var ls labels.Selector
	if labelSel != "" {
		s, err := labels.Parse(labelSel)
		if err != nil {
			// labels.Parse already says "unable to parse requirement: ...".
			return nil, apierrors.NewBadRequest(err.Error())
		}
		ls = s
	}
	var fs fields.Selector
	if fieldSel != "" {
		s, err := fields.ParseSelector(fieldSel)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector %q: %v", fieldSel, err))
		}
		for _, r := range s.Requirements() {
			if !st.supportsField(r.Field) {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s (%s supports %s)",
					r.Field, st.Resource.GVR.Resource, strings.Join(st.fieldNames(), ", ")))
			}
		}
		fs = s
	}
	if ls == nil && fs == nil {
		return nil, nil
	}
	return func(obj runtime.Object) bool {
		m, err := meta.Accessor(obj)
		if err != nil {
			return false
		}
		if ls != nil && !ls.Matches(labels.Set(m.GetLabels())) {
			return false
		}
		if fs != nil {
			set := fields.Set{"metadata.name": m.GetName()}
			if st.Resource.Namespaced {
				set["metadata.namespace"] = m.GetNamespace()
			}
			if st.Resource.Fields != nil {
				for k, v := range st.Resource.Fields(obj) {
					set[k] = v
				}
			}
			if !fs.Matches(set) {
				return false
			}
		}
		return true
	}, nil
}

func (st *Store) fieldNames() []string {
	names := []string{"metadata.name"}
	if st.Resource.Namespaced {
		names = append(names, "metadata.namespace")
	}
	if st.Resource.Fields != nil {
		for k := range st.Resource.Fields(st.Resource.NewFunc()) {
			names = append(names, k)
		}
	}
	return names
}

func (st *Store) supportsField(f string) bool {
	for _, n := range st.fieldNames() {
		if n == f {
			return true
		}
	}
	return false
}
