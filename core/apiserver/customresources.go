package apiserver

import (
	"context"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"

	autoscalingv1 "k8s.io/api/autoscaling/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/crd"
	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// Custom resources (docs/crds.md): every served version of every CustomResourceDefinition
// becomes a resource of the same generic store, its objects unstructured, stored under
// /registry/<group>/<plural>/. The set changes at run time, so it lives beside the static
// table, behind a lock, rebuilt from the CRDs in etcd whenever one changes (a watch, so
// the servers of an HA pair agree; and at once after a CRD write on this server).

// cleanupFinalizer holds a deleted CRD until its custom objects are gone (upstream's).
const cleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

var crdGVR = crd.Resource

type customResources struct {
	s  *Server
	mu sync.RWMutex
	// byGVR, stores and list are replaced whole by refresh (readers keep what they got).
	byGVR  map[schema.GroupVersionResource]*registry.Resource
	stores map[schema.GroupVersionResource]*registry.Store
	list   []*registry.Resource // discovery order: by group, then version priority, then plural
	defs   []*apiextensionsv1.CustomResourceDefinition
	// compiled caches compiled versions per CRD name and resourceVersion.
	compiled  map[string]compiledDef
	refreshMu sync.Mutex
	// cleaning holds the uids of deleted CRDs whose objects are being deleted (one cleanup
	// each, however many refreshes see them).
	cleaning sync.Map
}

type compiledDef struct {
	rv       string
	versions []*crd.Version
}

func newCustomResources(s *Server) *customResources {
	return &customResources{s: s, byGVR: map[schema.GroupVersionResource]*registry.Resource{}, stores: map[schema.GroupVersionResource]*registry.Store{},
		compiled: map[string]compiledDef{}}
}

// lookup finds a resource: the static table first, then the custom ones.
func (s *Server) lookup(gvr schema.GroupVersionResource) (*registry.Resource, bool) {
	if r, ok := s.reg[gvr]; ok {
		return r, true
	}
	if s.crds == nil {
		return nil, false
	}
	s.crds.mu.RLock()
	defer s.crds.mu.RUnlock()
	r, ok := s.crds.byGVR[gvr]
	return r, ok
}

// storeOf is the store of a resource lookup returned.
func (s *Server) storeOf(res *registry.Resource) *registry.Store {
	if st, ok := s.stores[res.GVR]; ok {
		return st
	}
	if res.Custom == nil {
		return nil // a create-only resource (reviews, TokenRequest): served without a store
	}
	s.crds.mu.RLock()
	defer s.crds.mu.RUnlock()
	if st, ok := s.crds.stores[res.GVR]; ok && st.Resource == res {
		return st
	}
	// The definition changed between lookup and now: serve with what the request found.
	return s.crds.newStore(res)
}

// servedResources is the static table followed by the custom resources.
func (s *Server) servedResources() []*registry.Resource {
	if s.crds == nil {
		return registry.Builtin()
	}
	s.crds.mu.RLock()
	defer s.crds.mu.RUnlock()
	out := make([]*registry.Resource, 0, len(registry.Builtin())+len(s.crds.list))
	return append(append(out, registry.Builtin()...), s.crds.list...)
}

// groupVersionsOf lists the group versions of rs in order of first appearance.
func groupVersionsOf(rs []*registry.Resource) []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range rs {
		gv := r.GVR.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}

func (c *customResources) newStore(res *registry.Resource) *registry.Store {
	v := res.Custom
	return &registry.Store{Resource: res, Chain: c.s.chain, Reads: registry.NewCustomReads(),
		Storage: c.s.backend.ForResource(v.StorageResource, v.New, v.NewList)}
}

// refresh rebuilds the custom resources from the CRDs in etcd and starts the cleanup of
// deleted ones.
func (c *customResources) refresh(ctx context.Context) error {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	st := c.s.stores[crdGVR]
	list, err := st.Storage.List(ctx, st.Prefix(""), storage.ListOptions{})
	if err != nil {
		return err
	}
	defs := list.(*apiextensionsv1.CustomResourceDefinitionList).Items
	compiled := map[string]compiledDef{}
	byGVR := map[schema.GroupVersionResource]*registry.Resource{}
	stores := map[schema.GroupVersionResource]*registry.Store{}
	var rs []*registry.Resource
	var served []*apiextensionsv1.CustomResourceDefinition
	for i := range defs {
		def := &defs[i]
		if def.DeletionTimestamp != nil {
			if _, busy := c.cleaning.LoadOrStore(def.UID, true); !busy {
				go func(def *apiextensionsv1.CustomResourceDefinition) {
					defer c.cleaning.Delete(def.UID)
					c.cleanup(context.WithoutCancel(ctx), def)
				}(def.DeepCopy())
			}
			continue
		}
		cd, ok := c.compiled[def.Name]
		if !ok || cd.rv != def.ResourceVersion {
			vs, err := crd.Compile(def)
			if err != nil {
				c.s.log.Warn("customresourcedefinition not served", "name", def.Name, "err", err)
				continue
			}
			cd = compiledDef{rv: def.ResourceVersion, versions: vs}
		}
		compiled[def.Name] = cd
		served = append(served, def)
		for _, v := range cd.versions {
			r := registry.ResourceOf(v)
			c.mu.RLock()
			old, had := c.stores[v.GVR]
			c.mu.RUnlock()
			if had && old.Resource.Custom == v {
				r = old.Resource
				stores[v.GVR] = old
			} else {
				stores[v.GVR] = c.newStore(r)
			}
			byGVR[v.GVR] = r
			rs = append(rs, r)
		}
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i].GVR, rs[j].GVR
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return version.CompareKubeAwareVersionStrings(a.Version, b.Version) > 0
		}
		return a.Resource < b.Resource
	})
	c.mu.Lock()
	c.byGVR, c.stores, c.list, c.defs, c.compiled = byGVR, stores, rs, served, compiled
	c.mu.Unlock()
	return nil
}

// run keeps the custom resources in step with the CRDs in etcd until ctx ends.
func (c *customResources) run(ctx context.Context) {
	st := c.s.stores[crdGVR]
	for ctx.Err() == nil {
		w, err := st.Storage.Watch(ctx, st.Prefix(""), storage.WatchOptions{})
		if err != nil {
			c.s.log.Warn("watch customresourcedefinitions", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for ok := true; ok; {
			select {
			case <-ctx.Done():
				w.Stop()
				return
			case _, ok = <-w.ResultChan():
			}
			if err := c.refresh(ctx); err != nil && ctx.Err() == nil {
				c.s.log.Warn("refresh custom resources", "err", err)
			}
		}
		w.Stop()
	}
}

// cleanup deletes every object of a deleted CRD, then its finalizer, then the CRD.
func (c *customResources) cleanup(ctx context.Context, def *apiextensionsv1.CustomResourceDefinition) {
	if !hasString(def.Finalizers, cleanupFinalizer) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	group, plural := def.Spec.Group, def.Spec.Names.Plural
	objs := c.s.backend.ForResource(group+"/"+plural, newUnstructured, newUnstructuredList)
	list, err := objs.List(ctx, storage.Prefix(group+"/"+plural, ""), storage.ListOptions{})
	if err != nil {
		c.s.log.Warn("delete custom objects of a deleted customresourcedefinition", "name", def.Name, "err", err)
		return
	}
	for _, it := range list.(*unstructured.UnstructuredList).Items {
		if _, err := objs.Delete(ctx, storage.Key(group+"/"+plural, it.GetNamespace(), it.GetName()), nil); err != nil && !errors.Is(err, storage.ErrNotFound) {
			c.s.log.Warn("delete custom object", "crd", def.Name, "namespace", it.GetNamespace(), "name", it.GetName(), "err", err)
			return
		}
	}
	st := c.s.stores[crdGVR]
	key := st.Key("", def.Name)
	uid := def.UID
	var gone runtime.Object
	_, err = st.Storage.GuaranteedUpdate(ctx, key, &storage.Preconditions{UID: &uid}, func(cur runtime.Object) (runtime.Object, error) {
		next := cur.DeepCopyObject().(*apiextensionsv1.CustomResourceDefinition)
		var keep []string
		for _, f := range next.Finalizers {
			if f != cleanupFinalizer {
				keep = append(keep, f)
			}
		}
		next.Finalizers = keep
		if registry.ReadyToVanish(next) {
			gone = next
			return nil, registry.ErrVanish
		}
		return next, nil
	})
	if errors.Is(err, registry.ErrVanish) {
		rv := registry.ObjMeta(gone).GetResourceVersion()
		_, err = st.Storage.Delete(ctx, key, &storage.Preconditions{UID: &uid, ResourceVersion: &rv})
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		c.s.log.Warn("finish deleting customresourcedefinition", "name", def.Name, "err", err)
	}
}

func newUnstructured() runtime.Object     { return &unstructured.Unstructured{} }
func newUnstructuredList() runtime.Object { return &unstructured.UnstructuredList{} }

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// crdWritten is called after a write to customresourcedefinitions on this server, so
// that the new resources are served before the response reaches the client.
func (s *Server) crdWritten(ctx context.Context) {
	if err := s.crds.refresh(ctx); err != nil {
		s.log.Warn("refresh custom resources", "err", err)
	}
}

// refreshFirst refreshes the custom resources when a CRD write succeeds, before its
// response is written: a client that creates a CRD can use its kind at once.
type refreshFirst struct {
	http.ResponseWriter
	refresh func()
	done    bool
}

func (w *refreshFirst) WriteHeader(code int) {
	if !w.done && code < 300 {
		w.refresh()
	}
	w.done = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *refreshFirst) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *refreshFirst) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ---- admission: the CRD itself and custom objects ----

// customAdmission defaults and validates CRDs (upstream's rules, through
// apiextensions-apiserver) and custom objects (their version's schema and CEL rules).
type customAdmission struct{ s *Server }

func (p customAdmission) Admit(ctx context.Context, a *admission.Attributes) error {
	switch o := a.Object.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		if a.Operation != admission.Create && a.Operation != admission.Update {
			return nil
		}
		if a.Subresource == "" {
			crd.Default(o)
		}
		if a.Operation == admission.Create {
			o.Finalizers = registry.AddString(o.Finalizers, cleanupFinalizer)
		}
		crd.SetStatus(o, metav1.Now())
	case *unstructured.Unstructured:
		if res, ok := p.s.lookup(a.Resource); ok && res.Custom != nil && a.Subresource != "scale" {
			res.Custom.ForStorage(o)
		}
	}
	return nil
}

func (p customAdmission) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Operation != admission.Create && a.Operation != admission.Update {
		return nil
	}
	switch o := a.Object.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		var old *apiextensionsv1.CustomResourceDefinition
		if a.OldObject != nil {
			old = a.OldObject.(*apiextensionsv1.CustomResourceDefinition)
		}
		if errs := crd.ValidateDefinition(ctx, o, old); len(errs) > 0 {
			return apierrors.NewInvalid(schema.GroupKind{Group: crdGVR.Group, Kind: "CustomResourceDefinition"}, o.Name, errs)
		}
	case *unstructured.Unstructured:
		res, ok := p.s.lookup(a.Resource)
		if !ok || res.Custom == nil {
			return nil
		}
		var old *unstructured.Unstructured
		if a.OldObject != nil {
			old, _ = a.OldObject.(*unstructured.Unstructured)
		}
		if errs := res.Custom.Validate(ctx, o, old); len(errs) > 0 {
			return apierrors.NewInvalid(res.Custom.GVK().GroupKind(), o.GetName(), errs)
		}
	}
	return nil
}

// ---- the scale subresource of custom resources ----

func customScaleOf(v *crd.Version, obj runtime.Object) (*autoscalingv1.Scale, error) {
	u := obj.(*unstructured.Unstructured)
	spec, status, sel, err := v.Replicas(u)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: sel},
	}, nil
}

// serveCustomScale is serveScale for a custom resource: replicas live at the paths its
// CRD's scale subresource names.
func (s *Server) serveCustomScale(ctx context.Context, rq *handlers.Request, st *registry.Store) error {
	v := st.Resource.Custom
	name := rq.Info.Name
	var toScale func(cur runtime.Object) (*autoscalingv1.Scale, error)
	var applyScale func(cur runtime.Object) (*autoscalingv1.Scale, []metav1.ManagedFieldsEntry, error)
	var applyWarnings []string
	switch rq.Info.Verb {
	case "get":
		obj, err := st.Storage.Get(ctx, st.Key(rq.Info.Namespace, name))
		if err != nil {
			return st.APIError(err, name)
		}
		sc, err := customScaleOf(v, obj)
		if err != nil {
			return err
		}
		return writeScale(rq, sc)
	case "update":
		obj, err := s.decodeAs(rq, scaleRes)
		if err != nil {
			return err
		}
		in := obj.(*autoscalingv1.Scale)
		toScale = func(runtime.Object) (*autoscalingv1.Scale, error) { return in, nil }
	case "patch":
		body, opts, isApply, err := handlers.ApplyRequest(rq)
		if err != nil {
			return err
		}
		if isApply {
			// A server-side apply of the Scale, as serveScale's (registry.ScaleApply).
			applyScale = func(cur runtime.Object) (*autoscalingv1.Scale, []metav1.ManagedFieldsEntry, error) {
				old, err := customScaleOf(v, cur)
				if err != nil {
					return nil, nil, err
				}
				sc, mf, warnings, err := st.ScaleApply(cur, old, body, opts)
				applyWarnings = warnings
				return sc, mf, err
			}
			break
		}
		apply, err := handlers.Patcher(rq, scaleRes)
		if err != nil {
			return err
		}
		toScale = func(cur runtime.Object) (*autoscalingv1.Scale, error) {
			sc, err := customScaleOf(v, cur)
			if err != nil {
				return nil, err
			}
			out, err := apply(sc)
			if err != nil {
				return nil, err
			}
			return out.(*autoscalingv1.Scale), nil
		}
	default:
		return apierrors.NewMethodNotSupported(st.Resource.GVR.GroupResource(), rq.Info.Verb)
	}
	irq := *rq
	ii := *rq.Info
	ii.Subresource = ""
	irq.Info = &ii
	wr := irq.ForStore()
	wr.Owned = true // the scale's own entry (registry.Store.ScaleOwnership)
	out, err := st.Update(ctx, wr, name, nil, func(cur runtime.Object) (runtime.Object, error) {
		var sc *autoscalingv1.Scale
		var mf []metav1.ManagedFieldsEntry
		var err error
		if applyScale != nil {
			sc, mf, err = applyScale(cur)
		} else {
			sc, err = toScale(cur)
		}
		if err != nil {
			return nil, err
		}
		if sc.Spec.Replicas < 0 {
			return nil, apierrors.NewInvalid(scaleRes.GVK().GroupKind(), name, field.ErrorList{
				field.Invalid(field.NewPath("spec", "replicas"), sc.Spec.Replicas, "must be greater than or equal to 0")})
		}
		if sc.ResourceVersion != "" && sc.ResourceVersion != registry.ObjMeta(cur).GetResourceVersion() {
			return nil, apierrors.NewConflict(st.Resource.GVR.GroupResource(), name, errors.New(registry.OptimisticLockMsg))
		}
		next := cur.DeepCopyObject().(*unstructured.Unstructured)
		if err := v.SetReplicas(next, sc.Spec.Replicas); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if applyScale == nil {
			old, err := customScaleOf(v, cur)
			if err != nil {
				return nil, err
			}
			if mf, err = st.ScaleOwnership(cur, old, sc, wr.Manager); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
		}
		registry.ObjMeta(next).SetManagedFields(mf)
		return next, nil
	})
	wr.Warn(applyWarnings)
	if err != nil {
		return err
	}
	sc, err := customScaleOf(v, out)
	if err != nil {
		return err
	}
	return writeScale(rq, sc)
}

// ---- OpenAPI ----

// serveOpenAPI adds the custom resources' group versions to /openapi/v3 (the index and
// one document each, built by crd.OpenAPIV3); everything else is the static documents'.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	s.crds.mu.RLock()
	defs := s.crds.defs
	gvs := groupVersionsOf(s.crds.list)
	s.crds.mu.RUnlock()
	if len(gvs) == 0 || !strings.HasPrefix(path, "/openapi/v3") || r.Method != http.MethodGet {
		s.openapi.ServeHTTP(w, r)
		return
	}
	if path == "/openapi/v3" {
		rec := httptest.NewRecorder()
		s.openapi.ServeHTTP(rec, r)
		var index struct {
			Paths map[string]any `json:"paths"`
		}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &index) != nil {
			s.openapi.ServeHTTP(w, r)
			return
		}
		for _, gv := range gvs {
			doc, err := crd.OpenAPIV3(gv, defs)
			if err != nil || doc == nil {
				continue
			}
			key := "apis/" + gv.Group + "/" + gv.Version
			index.Paths[key] = map[string]string{"serverRelativeURL": "/openapi/v3/" + key + "?hash=" + openapiHash(doc)}
		}
		w.Header().Set("Cache-Control", "no-cache, private")
		handlers.WriteJSON(w, http.StatusOK, index, handlers.OutJSON)
		return
	}
	for _, gv := range gvs {
		if path != "/openapi/v3/apis/"+gv.Group+"/"+gv.Version {
			continue
		}
		doc, err := crd.OpenAPIV3(gv, defs)
		if err != nil {
			handlers.WriteError(w, apierrors.NewInternalError(err))
			return
		}
		hash := openapiHash(doc)
		if h := r.URL.Query().Get("hash"); h != "" && h != hash {
			w.Header().Set("Location", path+"?hash="+hash)
			w.WriteHeader(http.StatusMovedPermanently)
			return
		}
		w.Header().Set("ETag", `"`+hash+`"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(doc)
		return
	}
	s.openapi.ServeHTTP(w, r)
}

func openapiHash(b []byte) string { return fmt.Sprintf("%X", sha512.Sum512(b)) }
