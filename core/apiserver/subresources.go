package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/apiserver/serviceaccount"
	"github.com/wasmkube/wasmkube/core/storage"
)

// pseudo-resources for decoding subresource bodies.
var (
	bindingRes     = &registry.Resource{GVR: corev1.SchemeGroupVersion.WithResource("bindings"), Kind: "Binding", NewFunc: registry.NewOf[corev1.Binding]()}
	evictionRes    = &registry.Resource{GVR: policyv1.SchemeGroupVersion.WithResource("evictions"), Kind: "Eviction", NewFunc: registry.NewOf[policyv1.Eviction]()}
	scaleRes       = &registry.Resource{GVR: autoscalingv1.SchemeGroupVersion.WithResource("scales"), Kind: "Scale", NewFunc: registry.NewOf[autoscalingv1.Scale]()}
	tokenReviewRes *registry.Resource
)

func init() {
	for _, r := range registry.Builtin() {
		if r.GVR.Resource == "tokenreviews" {
			tokenReviewRes = r
		}
	}
}

func (s *Server) decodeAs(rq *handlers.Request, res *registry.Resource) (runtime.Object, error) {
	return handlers.DecodeRequest(rq, res)
}

// serveBinding sets spec.nodeName of an unbound pod (the scheduler's bind).
func (s *Server) serveBinding(ctx context.Context, rq *handlers.Request, st *registry.Store) error {
	obj, err := s.decodeAs(rq, bindingRes)
	if err != nil {
		return err
	}
	b := obj.(*corev1.Binding)
	name := rq.Info.Name
	if b.Name != "" && b.Name != name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the binding (%s) does not match the pod name on the URL (%s)", b.Name, name))
	}
	if b.Target.Name == "" {
		return apierrors.NewInvalid(bindingRes.GVK().GroupKind(), name, field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		return apierrors.NewInvalid(bindingRes.GVK().GroupKind(), name, field.ErrorList{field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node"})})
	}
	if rq.DryRun {
		handlers.WriteStatusSuccess(rq.W, http.StatusCreated, nil)
		return nil
	}
	var pre *storage.Preconditions
	if b.UID != "" {
		uid := b.UID
		pre = &storage.Preconditions{UID: &uid}
	}
	_, err = st.Storage.GuaranteedUpdate(ctx, st.Key(rq.Info.Namespace, name), pre, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.DeepCopyObject().(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(st.Resource.GVR.GroupResource(), name, errors.New("pod is being deleted, cannot be assigned to a host"))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(st.Resource.GVR.GroupResource(), name, fmt.Errorf("pod %s is already assigned to node %q", name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		// As upstream: the Binding's annotations are copied onto the pod, so a scheduler
		// records what it decided in the same write as the decision.
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodScheduled(pod)
		return pod, nil
	})
	if err != nil {
		return st.APIError(err, name)
	}
	handlers.WriteStatusSuccess(rq.W, http.StatusCreated, nil)
	return nil
}

func setPodScheduled(pod *corev1.Pod) {
	now := metav1.Now()
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			pod.Status.Conditions[i].Status = corev1.ConditionTrue
			pod.Status.Conditions[i].Reason = ""
			pod.Status.Conditions[i].Message = ""
			pod.Status.Conditions[i].LastTransitionTime = now
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now})
}

// serveEviction deletes a pod as requested by an Eviction, if its disruption budget allows.
func (s *Server) serveEviction(ctx context.Context, rq *handlers.Request, st *registry.Store) error {
	obj, err := s.decodeAs(rq, evictionRes)
	if err != nil {
		return err
	}
	ev := obj.(*policyv1.Eviction)
	if ev.Name != "" && ev.Name != rq.Info.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("name in URL does not match name in Eviction object"))
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if err := s.checkDisruptionBudget(ctx, st, rq.Info.Namespace, rq.Info.Name, rq.DryRun); err != nil { // eviction.go
		return err
	}
	irq := *rq
	ii := *rq.Info
	ii.Subresource, ii.Verb = "", "delete"
	irq.Info = &ii
	if _, _, err := st.Delete(ctx, irq.ForStore(), rq.Info.Name, opts); err != nil {
		return err
	}
	handlers.WriteStatusSuccess(rq.W, http.StatusCreated, nil)
	return nil
}

// ---- scale ----

func replicasOf(obj runtime.Object) (spec, status int32, sel *metav1.LabelSelector) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		spec = 1
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
		return spec, o.Status.Replicas, o.Spec.Selector
	case *appsv1.ReplicaSet:
		spec = 1
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
		return spec, o.Status.Replicas, o.Spec.Selector
	case *appsv1.StatefulSet:
		spec = 1
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
		return spec, o.Status.Replicas, o.Spec.Selector
	}
	return 0, 0, nil
}

func setReplicas(obj runtime.Object, n int32) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &n
	case *appsv1.StatefulSet:
		o.Spec.Replicas = &n
	}
}

func scaleOf(obj runtime.Object) *autoscalingv1.Scale {
	m := registry.ObjMeta(obj)
	spec, status, sel := replicasOf(obj)
	sc := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status},
	}
	if sel != nil {
		if s, err := metav1.LabelSelectorAsSelector(sel); err == nil {
			sc.Status.Selector = s.String()
		}
	}
	return sc
}

// serveScale serves the autoscaling/v1 Scale of deployments, replicasets and statefulsets.
func (s *Server) serveScale(ctx context.Context, rq *handlers.Request, st *registry.Store) error {
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
		return writeScale(rq, scaleOf(obj))
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
			// A server-side apply of the Scale: merged by the Scale's field manager, whose
			// entries (subresource scale) are mapped onto the parent's (registry.ScaleApply).
			applyScale = func(cur runtime.Object) (*autoscalingv1.Scale, []metav1.ManagedFieldsEntry, error) {
				sc, mf, warnings, err := st.ScaleApply(cur, scaleOf(cur), body, opts)
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
			out, err := apply(scaleOf(cur))
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
		next := cur.DeepCopyObject()
		setReplicas(next, sc.Spec.Replicas)
		if applyScale == nil {
			if mf, err = st.ScaleOwnership(cur, scaleOf(cur), sc, wr.Manager); err != nil {
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
	return writeScale(rq, scaleOf(out))
}

// writeScale writes a Scale, or upstream's Table of it (NAME DESIRED AVAILABLE) for
// `kubectl get --subresource=scale`.
func writeScale(rq *handlers.Request, sc *autoscalingv1.Scale) error {
	if rq.Format != handlers.OutTable {
		handlers.WriteJSON(rq.W, http.StatusOK, sc, rq.Format)
		return nil
	}
	row, err := handlers.TableRowObject(sc, rq.Query.Get("includeObject"))
	if err != nil {
		return err
	}
	t := &metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ListMeta: metav1.ListMeta{ResourceVersion: sc.ResourceVersion},
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
			{Name: "Desired", Type: "integer", Description: "Desired number of replicas (spec.replicas)."},
			{Name: "Available", Type: "integer", Description: "Actual number of replicas (status.replicas)."},
		},
		Rows: []metav1.TableRow{{Cells: []any{sc.Name, sc.Spec.Replicas, sc.Status.Replicas}, Object: row}},
	}
	handlers.WriteJSON(rq.W, http.StatusOK, t, rq.Format)
	return nil
}

// ---- tokenreviews ----

func (s *Server) serveTokenReview(rq *handlers.Request) error {
	obj, err := s.decodeAs(rq, tokenReviewRes)
	if err != nil {
		return err
	}
	tr := obj.(*authenticationv1.TokenReview)
	if tr.Spec.Token == "" {
		return apierrors.NewInvalid(tokenReviewRes.GVK().GroupKind(), "", field.ErrorList{field.Required(field.NewPath("spec", "token"), "")})
	}
	// The static tokens (--token-auth-file) first, as a request's own authentication
	// does: a component that delegates authentication (a scheduler's /debug/pprof/) must
	// know the same users the API server knows.
	u, ok := s.authenticateStatic(tr.Spec.Token)
	if !ok {
		u, ok = s.auth.Authenticate(tr.Spec.Token)
	}
	auds := tr.Spec.Audiences
	var saErr error
	if !ok {
		// A service account token is checked for the audiences asked about (the API
		// server's own when none), and answers with those it matched, as upstream.
		want := tr.Spec.Audiences
		if len(want) == 0 {
			want = s.apiAudiences()
		}
		u, auds, saErr = s.authenticateServiceAccount(rq.Req.Context(), tr.Spec.Token, want)
		ok = saErr == nil
	}
	tr.Status = authenticationv1.TokenReviewStatus{Authenticated: ok}
	if ok {
		tr.Status.User = authenticationv1.UserInfo{Username: u.Name, Groups: u.Groups}
		tr.Status.Audiences = auds
	} else if saErr != nil && !errors.Is(saErr, serviceaccount.ErrNotOurs) {
		tr.Status.Error = saErr.Error()
	} else {
		tr.Status.Error = "invalid bearer token"
	}
	tr.Spec.Token = ""
	handlers.WriteJSON(rq.W, http.StatusCreated, tr, rq.Format)
	return nil
}

// ---- pods/log ----

func newKubeletClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		// Kubelets serve with self-signed certificates (a known gap: see docs/apiserver.md).
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   4,
	}}
}

// kubeletAddress returns host:port of a node's kubelet server.
func kubeletAddress(node *corev1.Node) (string, error) {
	host := ""
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			host = a.Address
			break
		}
	}
	if host == "" && len(node.Status.Addresses) > 0 {
		host = node.Status.Addresses[0].Address
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if host == "" || port == 0 {
		return "", fmt.Errorf("node %s reports no kubelet address (status.addresses) or port (status.daemonEndpoints.kubeletEndpoint.port)", node.Name)
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), nil
}

var logQueryParams = []string{"follow", "previous", "tailLines", "timestamps", "sinceSeconds", "sinceTime", "limitBytes"}

// servePodLog proxies GET pods/<name>/log to the pod's kubelet at
// /containerLogs/<ns>/<pod>/<container>, streaming the answer.
func (s *Server) servePodLog(ctx context.Context, rq *handlers.Request, st *registry.Store) error {
	name, ns := rq.Info.Name, rq.Info.Namespace
	obj, err := st.Storage.Get(ctx, st.Key(ns, name))
	if err != nil {
		return st.APIError(err, name)
	}
	pod := obj.(*corev1.Pod)
	container := rq.Query.Get("container")
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			names := make([]string, len(pod.Spec.Containers))
			for i, c := range pod.Spec.Containers {
				names[i] = c.Name
			}
			return apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", name, names))
		}
		container = pod.Spec.Containers[0].Name
	} else if !podHasContainer(pod, container) {
		return apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, name))
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
	}
	nst := s.stores[corev1.SchemeGroupVersion.WithResource("nodes")]
	nobj, err := nst.Storage.Get(ctx, nst.Key("", pod.Spec.NodeName))
	if err != nil {
		return nst.APIError(err, pod.Spec.NodeName)
	}
	addr, err := kubeletAddress(nobj.(*corev1.Node))
	if err != nil {
		return apierrors.NewServiceUnavailable(err.Error())
	}
	q := url.Values{}
	for _, p := range logQueryParams {
		if v := rq.Query.Get(p); v != "" {
			q.Set(p, v)
		}
	}
	u := url.URL{Scheme: "https", Host: addr, Path: "/containerLogs/" + ns + "/" + name + "/" + container, RawQuery: q.Encode()}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.stoppedCh():
			cancel()
		case <-pctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.auth.File.Loopback)
	resp, err := s.kubeletClient.Do(req)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("reach kubelet of node %s at %s: %v", pod.Spec.NodeName, addr, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		code := resp.StatusCode
		if code < 400 {
			code = http.StatusInternalServerError
		}
		// The kubelet's words reach the user, as upstream's proxy passes them on:
		// `container "app" in pod "web" is waiting to start: ContainerCreating`.
		text := strings.TrimSpace(string(msg))
		if text == "" {
			text = fmt.Sprintf("kubelet of node %s answered %d", pod.Spec.NodeName, resp.StatusCode)
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: int32(code), Reason: logReason(code), Message: text,
		}}
	}
	rq.W.Header().Set("Content-Type", "text/plain")
	rq.W.WriteHeader(http.StatusOK)
	flusher, _ := rq.W.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := rq.W.Write(buf[:n]); werr != nil {
				return nil
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			return nil
		}
	}
}

// logReason is the Status reason for a kubelet's answer code.
func logReason(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	default:
		return metav1.StatusReasonInternalError
	}
}

// podHasContainer reports whether the pod has an app, init or ephemeral container name.
func podHasContainer(pod *corev1.Pod, name string) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			if c.Name == name {
				return true
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}
