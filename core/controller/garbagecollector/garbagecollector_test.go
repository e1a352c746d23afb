package garbagecollector

import (
	"context"
	"io"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

var rsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}

func replicaSet(name, uid string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("ReplicaSet")
	u.SetNamespace("default")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetResourceVersion("7")
	u.SetOwnerReferences(owners)
	return u
}

// newTestCollector is a collector on fake clients holding objs, with an empty graph.
func newTestCollector(t *testing.T, objs ...runtime.Object) (*Collector, *fakedynamic.FakeDynamicClient) {
	t.Helper()
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{
			rsGVR: "ReplicaSetList",
			{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
		}, objs...)
	disco := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "apps/v1",
		APIResources: []metav1.APIResource{
			{Name: "replicasets", Namespaced: true, Kind: "ReplicaSet", Verbs: []string{"get", "list", "watch", "delete", "patch"}},
			{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: []string{"get", "list", "watch", "delete", "patch"}},
		},
	}}}}
	c := &Collector{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
		graph: newGraph(), queue: worker.NewQueue(Name), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return c, dyn
}

func deletes(dyn *fakedynamic.FakeDynamicClient) int {
	n := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "delete" {
			n++
		}
	}
	return n
}

// A dependent whose owner was just orphaned away: the API object has no owner any more, the
// graph still lists the (now deleted) owner. The collector must not delete it.
func TestStaleGraphDoesNotDeleteAnOrphanedDependent(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "dep-1"}
	c, dyn := newTestCollector(t, replicaSet("web-1", "rs-1")) // live: orphaned
	c.graph.upsert(&object{gvr: rsGVR, namespace: "default", name: "web-1", uid: "rs-1", owners: []metav1.OwnerReference{owner}, resourceVersion: "6"})
	if err := c.sync(context.Background(), "rs-1"); err != nil {
		t.Fatal(err)
	}
	if n := deletes(dyn); n != 0 {
		t.Fatalf("the orphaned replicaset was deleted (%d delete calls) on a stale graph", n)
	}
	if _, err := dyn.Resource(rsGVR).Namespace("default").Get(context.Background(), "web-1", metav1.GetOptions{}); err != nil {
		t.Fatalf("replicaset gone: %v", err)
	}
}

// The same dependent whose owner really is gone (the API object still names it) is deleted.
func TestDanglingOwnerDeletesDependent(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "dep-1"}
	c, dyn := newTestCollector(t, replicaSet("web-1", "rs-1", owner))
	c.graph.upsert(&object{gvr: rsGVR, namespace: "default", name: "web-1", uid: "rs-1", owners: []metav1.OwnerReference{owner}, resourceVersion: "7"})
	if err := c.sync(context.Background(), "rs-1"); err != nil {
		t.Fatal(err)
	}
	if n := deletes(dyn); n != 1 {
		t.Fatalf("%d delete calls for a replicaset whose owner is gone, want 1", n)
	}
}
