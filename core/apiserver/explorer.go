package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/explorer"
)

// The decision explorer's API (explorer.wasmkube.io/v1alpha1, docs/explorer.md): the
// server keeps the records of its admission chain and those the scheduler pushes in one
// ring, and serves them with the kubelets' (read through the node proxy) to whoever may
// read the objects they are about.

// explorerResources are the group's resources as discovery lists them (they have no
// store: core/explorer serves them).
var explorerResources = func() []*registry.Resource {
	var out []*registry.Resource
	for _, r := range explorer.Resources() {
		out = append(out, &registry.Resource{GVR: explorerGV.WithResource(r.Name), Kind: r.Kind, Singular: r.SingularName,
			Namespaced: r.Namespaced, ReadOnly: true})
	}
	return out
}()

var explorerGV = schema.GroupVersion{Group: explorerv1.GroupName, Version: explorerv1.Version}

// initExplorer makes the ring, the admission chain's recorder and the handler.
func (s *Server) initExplorer() {
	if s.opts.ExplorerRecords < 0 {
		return
	}
	source, _ := os.Hostname()
	ring := explorer.NewRing(s.opts.ExplorerRecords)
	s.explorerRec = explorer.NewRecorder(ring, explorerv1.ComponentAPIServer, source)
	s.explorer = &explorer.Handler{Ring: ring, Cluster: explorerCluster{s}, Log: s.log}
	s.chain.SetRecorder(admission.NewRecorder(s.explorerRec))
	for _, p := range s.opts.Admission {
		if w, ok := p.(admission.WantsDecisionRecorder); ok {
			w.SetDecisionRecorder(s.explorerRec)
		}
	}
}

// ExplorerRecorder is where the server's own decisions go (its admission chain's, its
// policies' swaps); nil when Options.ExplorerRecords < 0.
func (s *Server) ExplorerRecorder() *explorer.Recorder { return s.explorerRec }

// serveExplorer answers below explorerv1.PathPrefix for user.
func (s *Server) serveExplorer(w http.ResponseWriter, r *http.Request, user admission.UserInfo) {
	if s.explorer == nil {
		handlers.WriteError(w, apierrors.NewServiceUnavailable("the decision explorer is off on this server (explorer.records < 0)"))
		return
	}
	s.explorer.Serve(w, r, func(ctx context.Context, a explorer.Access) (bool, string) {
		return s.authorizeAttrs(ctx, &authz.Attributes{User: user, Verb: a.Verb, ResourceRequest: true, Group: a.Group,
			Resource: a.Resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name})
	})
}

// explorerCluster reads pods from the store and the kubelets' records through the
// kubelet client the node proxy uses.
type explorerCluster struct{ s *Server }

func (c explorerCluster) Pod(ctx context.Context, ns, name string) (uid, node string, found bool, err error) {
	st := c.s.stores[corev1.SchemeGroupVersion.WithResource("pods")]
	obj, err := st.Storage.Get(ctx, st.Key(ns, name))
	if err != nil {
		apiErr := st.APIError(err, name)
		if apierrors.IsNotFound(apiErr) {
			return "", "", false, nil
		}
		return "", "", false, apiErr
	}
	pod := obj.(*corev1.Pod)
	return string(pod.UID), pod.Spec.NodeName, true, nil
}

func (c explorerCluster) NodeRecords(ctx context.Context, node string) ([]explorerv1.Record, error) {
	st := c.s.stores[corev1.SchemeGroupVersion.WithResource("nodes")]
	obj, err := st.Storage.Get(ctx, st.Key("", node))
	if err != nil {
		return nil, st.APIError(err, node)
	}
	n := obj.(*corev1.Node)
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port == 0 {
		// The node serves no kubelet API (a hollow node without Options.ServeStats): it ran
		// no hooks, so it has no records to show, which is no error.
		return nil, nil
	}
	addr, err := kubeletAddress(n)
	if err != nil {
		return nil, err
	}
	tr, err := c.s.streamTransport()
	if err != nil {
		return nil, err
	}
	u := &url.URL{Scheme: "https", Host: addr, Path: explorer.KubeletRecordsPath}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		// A kubelet that keeps no records (a hollow node, an older kubelet): none to show.
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("node %s: kubelet answered %s", node, resp.Status)
	}
	var list explorerv1.RecordList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	return list.Items, nil
}

// withExplorer adds the explorer's resources to those discovery lists.
func withExplorer(served []*registry.Resource) []*registry.Resource {
	return slices.Concat(served, explorerResources)
}
