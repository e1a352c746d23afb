package endpointslice

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// MirrorName is the mirroring controller's name in logs and metrics.
const MirrorName = "endpointslicemirroring"

// skipMirrorLabel on an Endpoints object keeps it out of the mirror (the API server sets it
// on the kubernetes Service's, whose slice it writes itself).
const skipMirrorLabel = "endpointslice.kubernetes.io/skip-mirror"

// Mirror is upstream's EndpointSliceMirroring controller: the Endpoints a user writes for
// a Service without a selector are copied into slices, so readers of slices (the node
// proxy, the DNS) see them.
type Mirror struct {
	client    kubernetes.Interface
	svcLister corelisters.ServiceLister
	epLister  corelisters.EndpointsLister
	slices    discoverylisters.EndpointSliceLister
	synced    []cache.InformerSynced
	queue     worker.Queue
	log       *slog.Logger
	tracker   *tracker
}

// NewMirror wires the mirroring controller to the factory's Service, Endpoints and
// EndpointSlice informers.
func NewMirror(client kubernetes.Interface, f informers.SharedInformerFactory, log *slog.Logger) (*Mirror, error) {
	if log == nil {
		log = slog.Default()
	}
	svcInf, epInf, esInf := f.Core().V1().Services(), f.Core().V1().Endpoints(), f.Discovery().V1().EndpointSlices()
	m := &Mirror{client: client, svcLister: svcInf.Lister(), epLister: epInf.Lister(), slices: esInf.Lister(),
		synced: []cache.InformerSynced{svcInf.Informer().HasSynced, epInf.Informer().HasSynced, esInf.Informer().HasSynced},
		queue:  worker.NewQueue(MirrorName), log: log.With("controller", MirrorName), tracker: newTracker()}
	for _, inf := range []cache.SharedIndexInformer{svcInf.Informer(), epInf.Informer()} {
		if _, err := inf.AddEventHandler(worker.EnqueueAll(m.queue)); err != nil {
			return nil, err
		}
	}
	if _, err := esInf.Informer().AddEventHandler(sliceHandler(m.queue, MirrorManagedBy)); err != nil {
		return nil, err
	}
	return m, nil
}

// Run mirrors with workers workers until ctx is done.
func (m *Mirror) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), m.synced...) {
		return
	}
	worker.Run(ctx, MirrorName, m.queue, workers, m.sync, m.log)
}

func (m *Mirror) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	existing, err := managedSlices(m.slices, ns, name, MirrorManagedBy)
	if err != nil {
		return err
	}
	if !m.tracker.seen(key, existing, m.slices) {
		return worker.RequeueAfter(100 * time.Millisecond)
	}
	svc, err := m.svcLister.Services(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	ep, eerr := m.epLister.Endpoints(ns).Get(name)
	if eerr != nil && !apierrors.IsNotFound(eerr) {
		return eerr
	}
	if svc == nil || svc.Spec.Selector != nil || ep == nil || ep.Labels[skipMirrorLabel] == "true" ||
		svc.Spec.Type == corev1.ServiceTypeExternalName {
		return apply(ctx, m.client, m.tracker, key, Changes{Delete: existing})
	}
	ch := Reconcile(Owner{Service: svc, ManagedBy: MirrorManagedBy, MaxPerSlice: mirrorMaxPerSlice}, EndpointsGroups(ep), existing)
	return apply(ctx, m.client, m.tracker, key, ch)
}
