package upstreamattrs

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Namespaces is client-go's NamespaceLister over the API server's object reader, for
// upstream's namespace matcher. A namespace that does not exist is given as one without
// labels, not NotFound: upstream's matcher would then ask its API client, which we do not
// give it, and NamespaceLifecycle, first in the chain, has already refused a request in a
// namespace that does not exist.
type Namespaces struct{ Reader admission.ObjectReader }

var _ corelisters.NamespaceLister = Namespaces{}

// Get implements NamespaceLister.
func (n Namespaces) Get(name string) (*corev1.Namespace, error) {
	if n.Reader == nil {
		return nil, errors.New("namespaces: the API server has not handed its reader")
	}
	obj, err := n.Reader.Get(context.Background(), "namespaces", "", name)
	if errors.Is(err, admission.ErrNotFound) {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	}
	if err != nil {
		return nil, err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, fmt.Errorf("namespace %s: read a %T", name, obj)
	}
	return ns, nil
}

// List implements NamespaceLister.
func (n Namespaces) List(sel labels.Selector) ([]*corev1.Namespace, error) {
	if n.Reader == nil {
		return nil, errors.New("namespaces: the API server has not handed its reader")
	}
	objs, err := n.Reader.List(context.Background(), "namespaces", "")
	if err != nil {
		return nil, err
	}
	var out []*corev1.Namespace
	for _, o := range objs {
		if ns, ok := o.(*corev1.Namespace); ok && sel.Matches(labels.Set(ns.Labels)) {
			out = append(out, ns)
		}
	}
	return out, nil
}
