// Package admissionpolicystatus writes a ValidatingAdmissionPolicy's status.typeChecking,
// as upstream's ValidatingAdmissionPolicy status controller does: each expression is
// checked with upstream's validating.TypeChecker against the OpenAPI schema of every kind
// the policy matches (read from the API server's /openapi/v3, upstream's
// ClientDiscoveryResolver), and the warnings are written with the generation they are for.
package admissionpolicystatus

import (
	"context"
	"log/slog"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listers "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs and metrics.
const Name = "validatingadmissionpolicy-status"

// Controller type-checks ValidatingAdmissionPolicies.
type Controller struct {
	client  kubernetes.Interface
	lister  listers.ValidatingAdmissionPolicyLister
	synced  cache.InformerSynced
	queue   worker.Queue
	checker *validating.TypeChecker
	log     *slog.Logger
}

// New wires the controller to the factory's ValidatingAdmissionPolicy informer.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	inf := f.Admissionregistration().V1().ValidatingAdmissionPolicies()
	c := &Controller{client: client, lister: inf.Lister(), synced: inf.Informer().HasSynced, queue: worker.NewQueue(Name),
		checker: &validating.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: client.Discovery()}, RestMapper: mapper},
		log:     log.With("controller", Name)}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run type-checks with workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.reconcile, c.log)
}

// NeedsCheck reports whether the policy's status is not yet for its generation.
func NeedsCheck(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	return p.Generation > p.Status.ObservedGeneration || p.Status.TypeChecking == nil
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	p, err := c.lister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !NeedsCheck(p) {
		return nil
	}
	warnings := c.checker.Check(p)
	up := p.DeepCopy()
	up.Status.ObservedGeneration = p.Generation
	up.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: warnings}
	_, err = c.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().UpdateStatus(ctx, up, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err // a conflict is retried from the informer's newer copy
}
