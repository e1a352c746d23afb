// Package kubeclient is how wasmkube's own components (scheduler, controllers, kubelet,
// hollow nodes, bench) connect to the API server: typed clientsets that speak protobuf,
// as upstream's components do.
package kubeclient

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// AcceptContentTypes is what our typed clients accept: protobuf first, JSON for any
// response the server cannot give in protobuf (upstream's components' default,
// component-base's ClientConnectionConfiguration).
const AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON

// Protobuf returns a copy of cfg whose typed clients send request bodies in protobuf and
// ask for protobuf responses and watch streams (application/vnd.kubernetes.protobuf),
// falling back to JSON. Use it for clientsets of k8s.io/api types only: dynamic and
// metadata clients set their own content types, and typed clients of types without
// protobuf (custom resources) must keep cfg as it is.
func Protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = AcceptContentTypes
	return c
}

// NewClientset is kubernetes.NewForConfig(Protobuf(cfg)): the clientset of built-in
// types every wasmkube component uses.
func NewClientset(cfg *rest.Config) (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(Protobuf(cfg))
}
