package report

import (
	"context"
	"log/slog"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// IdentityNamespace holds the identity Leases of API servers and schedulers.
const IdentityNamespace = "kube-system"

// SchedulerNamesAnnotation on a scheduler's identity Lease lists the profiles it runs
// (comma-separated), so the controller knows which schedulers a scheduler policy targets.
const SchedulerNamesAnnotation = "policy.wasmkube.io/scheduler-names"

// IdentityLeaseName is the name of an instance's identity Lease.
func IdentityLeaseName(component, instance string) string {
	return Name("wasmkube", component, instance)
}

// Identity says who keeps an identity Lease.
type Identity struct {
	// Component is policyv1alpha1.ComponentAPIServer or ComponentScheduler; Instance its
	// identity (the name its reports carry).
	Component, Instance string
	// SchedulerNames are a scheduler's profiles, read at each renewal (a reloaded
	// config changes them); nil for an API server.
	SchedulerNames func() []string
	// Period between renewals (default 10s); the Lease lasts four periods, after which
	// the controller no longer counts the instance.
	Period time.Duration
}

// Heartbeat keeps id's identity Lease in kube-system (labelled with ComponentLabel) renewed
// until ctx is done, as upstream's API servers keep theirs; kubelets need none (their
// Node's Ready condition is their liveness). A failed renewal is logged and tried again
// at the next period. On return the Lease is deleted, so a component stopped cleanly drops
// out of the count at once.
func Heartbeat(ctx context.Context, client kubernetes.Interface, id Identity, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	if id.Period <= 0 {
		id.Period = 10 * time.Second
	}
	leases := client.CoordinationV1().Leases(IdentityNamespace)
	name := IdentityLeaseName(id.Component, id.Instance)
	renew := func() error {
		now := metav1.NewMicroTime(time.Now())
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: IdentityNamespace}}
			l.Spec.AcquireTime = &now
		} else if err != nil {
			return err
		}
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		l.Labels[ComponentLabel] = id.Component
		if id.SchedulerNames != nil {
			if l.Annotations == nil {
				l.Annotations = map[string]string{}
			}
			l.Annotations[SchedulerNamesAnnotation] = strings.Join(id.SchedulerNames(), ",")
		}
		l.Spec.HolderIdentity = ptr.To(id.Instance)
		l.Spec.LeaseDurationSeconds = ptr.To(int32(4 * id.Period / time.Second))
		l.Spec.RenewTime = &now
		if l.ResourceVersion == "" {
			_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		} else {
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
		return err
	}
	t := time.NewTicker(id.Period)
	defer t.Stop()
	for {
		if err := renew(); err != nil && ctx.Err() == nil {
			log.Warn("renewing the identity Lease", "lease", name, "err", err)
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = leases.Delete(dctx, name, metav1.DeleteOptions{})
			cancel()
			return
		case <-t.C:
		}
	}
}

// Live reports whether an identity Lease is held at now, and until when.
func Live(l *coordinationv1.Lease, now time.Time) (bool, time.Time) {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil || l.Spec.HolderIdentity == nil {
		return false, time.Time{}
	}
	until := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	return now.Before(until), until
}
