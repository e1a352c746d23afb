package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/apiserver/serviceaccount"
	"github.com/wasmkube/wasmkube/core/apiserver/validation"
	"github.com/wasmkube/wasmkube/core/storage"
)

// defaultTokenSeconds is a TokenRequest's expiry when it asks for none, as upstream.
const defaultTokenSeconds = 3600

// saDeletionGrace: a token of an account deleted less than this long ago still passes, as
// upstream (requests racing the deletion).
const saDeletionGrace = 60 * time.Second

var tokenRequestRes = &registry.Resource{GVR: authenticationv1.SchemeGroupVersion.WithResource("tokenrequests"), Kind: "TokenRequest",
	NewFunc: registry.NewOf[authenticationv1.TokenRequest]()}

func (s *Server) apiAudiences() []string { return []string{s.saTokens.Issuer()} }

// authenticate maps a bearer token to its user: the server's own tokens first, then
// service account tokens.
func (s *Server) authenticate(ctx context.Context, token string) (admission.UserInfo, bool) {
	if u, ok := s.auth.Authenticate(token); ok {
		return u, true
	}
	u, _, err := s.authenticateServiceAccount(ctx, token, s.apiAudiences())
	return u, err == nil
}

// authenticateServiceAccount checks a service account token for one of audiences: its
// signature and expiry, then that its account, and the object it is bound to, still
// exist with the uids it names. It returns the user and the audiences matched.
func (s *Server) authenticateServiceAccount(ctx context.Context, token string, audiences []string) (admission.UserInfo, []string, error) {
	if token == "" {
		return admission.UserInfo{}, nil, serviceaccount.ErrNotOurs
	}
	c, err := s.saTokens.Verify(token, time.Now())
	if err != nil {
		return admission.UserInfo{}, nil, err
	}
	matched := serviceaccount.Intersect(c.Audiences, audiences)
	if len(matched) == 0 {
		return admission.UserInfo{}, nil, errors.New("token audiences is invalid for the current server")
	}
	get := func(res, name string) (metav1.Object, error) {
		st := s.stores[corev1.SchemeGroupVersion.WithResource(res)]
		ns := c.Namespace
		if res == "nodes" {
			ns = ""
		}
		obj, err := st.Storage.Get(ctx, st.Key(ns, name))
		if err != nil {
			return nil, err
		}
		return registry.ObjMeta(obj), nil
	}
	sa, err := get("serviceaccounts", c.ServiceAccount.Name)
	if err != nil {
		return admission.UserInfo{}, nil, fmt.Errorf("service account %s/%s: %w", c.Namespace, c.ServiceAccount.Name, err)
	}
	if string(sa.GetUID()) != c.ServiceAccount.UID {
		return admission.UserInfo{}, nil, fmt.Errorf("service account %s/%s was recreated (uid %s, token names %s)", c.Namespace, sa.GetName(), sa.GetUID(), c.ServiceAccount.UID)
	}
	if dt := sa.GetDeletionTimestamp(); dt != nil && time.Since(dt.Time) > saDeletionGrace {
		return admission.UserInfo{}, nil, fmt.Errorf("service account %s/%s is being deleted", c.Namespace, sa.GetName())
	}
	for _, b := range []struct {
		res string
		ref *serviceaccount.Ref
	}{{"pods", c.Pod}, {"secrets", c.Secret}, {"nodes", c.Node}} {
		if b.ref == nil {
			continue
		}
		obj, err := get(b.res, b.ref.Name)
		if err != nil {
			return admission.UserInfo{}, nil, fmt.Errorf("the token's %s %s: %w", b.res, b.ref.Name, err)
		}
		if string(obj.GetUID()) != b.ref.UID {
			return admission.UserInfo{}, nil, fmt.Errorf("the token's %s %s was recreated", b.res, b.ref.Name)
		}
	}
	return admission.UserInfo{Name: serviceaccount.Username(c.Namespace, c.ServiceAccount.Name), Groups: serviceaccount.Groups(c.Namespace)}, matched, nil
}

// serveTokenRequest is POST serviceaccounts/NAME/token: a signed token for the account,
// bound to a pod, secret or node when the request says so.
func (s *Server) serveTokenRequest(ctx context.Context, rq *handlers.Request, st *registry.Store) error {
	obj, err := s.decodeAs(rq, tokenRequestRes)
	if err != nil {
		return err
	}
	tr := obj.(*authenticationv1.TokenRequest)
	name, ns := rq.Info.Name, rq.Info.Namespace
	if tr.Spec.ExpirationSeconds == nil {
		e := int64(defaultTokenSeconds)
		tr.Spec.ExpirationSeconds = &e
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = s.apiAudiences()
	}
	if errs := validation.ValidateTokenRequest(tr); len(errs) > 0 {
		return apierrors.NewInvalid(tokenRequestRes.GVK().GroupKind(), name, errs)
	}
	saObj, err := st.Storage.Get(ctx, st.Key(ns, name))
	if err != nil {
		return st.APIError(err, name)
	}
	sa := saObj.(*corev1.ServiceAccount)
	claims := serviceaccount.Claims{Namespace: ns, ServiceAccount: serviceaccount.Ref{Name: sa.Name, UID: string(sa.UID)}, Audiences: tr.Spec.Audiences}
	node := admission.NodeName(rq.User)
	if b := tr.Spec.BoundObjectRef; b != nil {
		res := map[string]string{"Pod": "pods", "Secret": "secrets", "Node": "nodes"}[b.Kind]
		bst := s.stores[corev1.SchemeGroupVersion.WithResource(res)]
		bns := ns
		if b.Kind == "Node" {
			bns = ""
		}
		bobj, err := bst.Storage.Get(ctx, bst.Key(bns, b.Name))
		if err != nil {
			return bst.APIError(err, b.Name)
		}
		m := registry.ObjMeta(bobj)
		if b.UID != "" && b.UID != m.GetUID() {
			return apierrors.NewConflict(bst.Resource.GVR.GroupResource(), b.Name, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record (%s); the object might have been deleted and then recreated", b.UID, m.GetUID()))
		}
		ref := &serviceaccount.Ref{Name: m.GetName(), UID: string(m.GetUID())}
		tr.Spec.BoundObjectRef.UID = m.GetUID()
		switch b.Kind {
		case "Pod":
			pod := bobj.(*corev1.Pod)
			if pod.Spec.ServiceAccountName != sa.Name {
				return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name", sa.Name))
			}
			if node != "" && pod.Spec.NodeName != node {
				return apierrors.NewForbidden(st.Resource.GVR.GroupResource(), name, fmt.Errorf("node %q may only request tokens for pods bound to it", node))
			}
			claims.Pod = ref
		case "Secret":
			claims.Secret = ref
		case "Node":
			claims.Node = ref
		}
	}
	if node != "" && claims.Pod == nil {
		return apierrors.NewForbidden(st.Resource.GVR.GroupResource(), name, fmt.Errorf("node %q may only request tokens bound to pods", node))
	}
	now := time.Now()
	claims.IssuedAt, claims.Expiry = now, now.Add(time.Duration(*tr.Spec.ExpirationSeconds)*time.Second)
	tr.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(now)}
	tr.TypeMeta = metav1.TypeMeta{Kind: "TokenRequest", APIVersion: authenticationv1.SchemeGroupVersion.String()}
	if !rq.DryRun {
		tok, err := s.saTokens.Sign(claims)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("sign token for %s/%s: %w", ns, name, err))
		}
		tr.Status = authenticationv1.TokenRequestStatus{Token: tok, ExpirationTimestamp: metav1.NewTime(claims.Expiry)}
	}
	handlers.WriteJSON(rq.W, http.StatusCreated, tr, rq.Format)
	return nil
}

// getServiceAccount is the ServiceAccount admission plugin's reader: nil when absent.
// It reads through the server's watch-fed object cache (objreader.go, the one wasm
// policies read through), as upstream's plugin reads through an informer; an account the
// cache has not seen yet (created a moment ago) is read from storage, as upstream's
// plugin falls back to a live lookup.
func (s *Server) getServiceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	var obj runtime.Object
	err := admission.ErrNotFound
	if s.reader != nil {
		obj, err = s.reader.Get(ctx, "serviceaccounts", ns, name)
	}
	if errors.Is(err, admission.ErrNotFound) {
		st := s.stores[corev1.SchemeGroupVersion.WithResource("serviceaccounts")]
		if obj, err = st.Storage.Get(ctx, st.Key(ns, name)); errors.Is(err, storage.ErrNotFound) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount).DeepCopy(), nil
}

// seedServiceAccounts gives namespaces (by default the ones the server creates at start)
// their default account and kube-root-ca.crt, as the controller manager does for every
// namespace. The server also does it when a namespace is created, so a pod created right
// after its namespace gets its token without racing the controller (upstream refuses such
// a pod until the account exists), and a cluster without a controller manager (a node
// test) still works; the controller restores them when deleted.
func (s *Server) seedServiceAccounts(ctx context.Context, namespaces ...string) error {
	sas := s.stores[corev1.SchemeGroupVersion.WithResource("serviceaccounts")]
	cms := s.stores[corev1.SchemeGroupVersion.WithResource("configmaps")]
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}
	}
	for _, ns := range namespaces {
		now := metav1.Now()
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: admission.DefaultServiceAccountName, Namespace: ns}}
		sas.PrepareForCreate(sa, now)
		if _, err := sas.Storage.Create(ctx, sas.Key(ns, sa.Name), sas.TrackServerWrite(registry.ControllerManager, nil, sa)); err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
			return fmt.Errorf("apiserver: create service account %s/default: %w", ns, err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: admission.RootCAConfigMap, Namespace: ns},
			Data: map[string]string{"ca.crt": string(s.pki.CAPEM)}}
		cms.PrepareForCreate(cm, now)
		if _, err := cms.Storage.Create(ctx, cms.Key(ns, cm.Name), cms.TrackServerWrite(registry.ControllerManager, nil, cm)); err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
			return fmt.Errorf("apiserver: create configmap %s/%s: %w", ns, cm.Name, err)
		}
	}
	return nil
}

// seedExtensionAuthentication publishes kube-system/extension-apiserver-authentication, the
// ConfigMap in which upstream's API server tells the components that delegate
// authentication to it (kube-scheduler, kube-controller-manager, aggregated API servers)
// which CA signs the client certificates it trusts (client-ca-file). Without it their
// delegating authenticators log a lookup error every few seconds. It is rewritten at each
// start (the CA may have been rotated) as an Update by kube-apiserver; no request-header
// keys are published, since wasmkube has no authenticating front proxy.
func (s *Server) seedExtensionAuthentication(ctx context.Context) error {
	cms := s.stores[corev1.SchemeGroupVersion.WithResource("configmaps")]
	const name = "extension-apiserver-authentication"
	data := map[string]string{"client-ca-file": string(s.pki.CAPEM)}
	key := cms.Key(metav1.NamespaceSystem, name)
	_, err := cms.Storage.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
		if cur.(*corev1.ConfigMap).Data["client-ca-file"] == data["client-ca-file"] {
			return cur, nil
		}
		next := cur.DeepCopyObject().(*corev1.ConfigMap)
		next.Data = data
		return cms.TrackServerWrite(registry.ServerManager, cur, next), nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem}, Data: data}
		cms.PrepareForCreate(cm, metav1.Now())
		_, err = cms.Storage.Create(ctx, key, cms.TrackServerWrite(registry.ServerManager, nil, cm))
		if errors.Is(err, storage.ErrAlreadyExists) {
			err = nil // another server made it at the same moment
		}
	}
	if err != nil {
		return fmt.Errorf("apiserver: configmap %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	return nil
}
