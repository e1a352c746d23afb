// Package podautoscaler is the HorizontalPodAutoscaler controller: every sync period it
// reads each HPA's scale target (/scale of a Deployment, ReplicaSet or StatefulSet), the
// resource metrics of the target's pods (metrics.k8s.io, which the API server answers from
// the kubelets' cgroup stats), computes the replica count upstream's algorithm would
// (replicas.go: tolerance, missing and unready pods, stabilization window, scaling
// policies, min/max) and writes it to /scale, with the HPA's status (current metrics and
// the AbleToScale, ScalingActive and ScalingLimited conditions).
package podautoscaler

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs.
const Name = "horizontal-pod-autoscaler"

// DefaultSyncPeriod is upstream's --horizontal-pod-autoscaler-sync-period.
const DefaultSyncPeriod = 15 * time.Second

// Metrics is where the controller reads pod usage: the pods of namespace that selector
// matches, by pod name, in milli-units of res.
type Metrics interface {
	PodUsage(ctx context.Context, namespace string, selector labels.Selector, res corev1.ResourceName) (PodUsage, error)
}

// Options tune the controller. Zero values take the defaults.
type Options struct {
	// SyncPeriod between two evaluations of an HPA (default DefaultSyncPeriod).
	SyncPeriod time.Duration
	// Now is the clock of stabilization windows and policies (default time.Now).
	Now func() time.Time
}

// Controller reconciles HorizontalPodAutoscalers.
type Controller struct {
	client  kubernetes.Interface
	metrics Metrics
	hpas    autoscalinglisters.HorizontalPodAutoscalerLister
	pods    corelisters.PodLister
	synced  []cache.InformerSynced
	queue   worker.Queue
	rec     record.EventRecorder
	log     *slog.Logger
	opts    Options

	mu      sync.Mutex
	recs    map[string][]timestamped // key -> recent recommendations
	changes map[string][]timestamped // key -> recent scale changes (replicas: the signed change)
}

// New builds the controller on the shared informers of f.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, metrics Metrics, rec record.EventRecorder, opts Options, log *slog.Logger) (*Controller, error) {
	if opts.SyncPeriod <= 0 {
		opts.SyncPeriod = DefaultSyncPeriod
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	hi := f.Autoscaling().V2().HorizontalPodAutoscalers()
	pi := f.Core().V1().Pods()
	c := &Controller{client: client, metrics: metrics, hpas: hi.Lister(), pods: pi.Lister(),
		synced: []cache.InformerSynced{hi.Informer().HasSynced, pi.Informer().HasSynced},
		queue:  worker.NewQueue(Name), rec: rec, log: log.With("controller", Name), opts: opts,
		recs: map[string][]timestamped{}, changes: map[string][]timestamped{}}
	enqueue := func(o any) {
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
			c.queue.Add(k)
		}
	}
	if _, err := hi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(old, cur any) { enqueue(cur) },
		DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	hpa, err := c.hpas.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.recs, key)
		delete(c.changes, key)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.reconcile(ctx, key, hpa.DeepCopy()); err != nil {
		return err
	}
	return worker.RequeueAfter(c.opts.SyncPeriod)
}

// scaleClient reads and writes the /scale of the kinds the controller can scale.
func (c *Controller) getScale(ctx context.Context, ns string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, error) {
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	if group != "apps" {
		return nil, fmt.Errorf("scaleTargetRef %s %s: only apps/v1 Deployment, ReplicaSet and StatefulSet can be scaled", ref.APIVersion, ref.Kind)
	}
	apps := c.client.AppsV1()
	switch ref.Kind {
	case "Deployment":
		return apps.Deployments(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
	case "ReplicaSet":
		return apps.ReplicaSets(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
	case "StatefulSet":
		return apps.StatefulSets(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
	}
	return nil, fmt.Errorf("scaleTargetRef kind %q: only Deployment, ReplicaSet and StatefulSet can be scaled", ref.Kind)
}

func (c *Controller) updateScale(ctx context.Context, ns string, ref autoscalingv2.CrossVersionObjectReference, s *autoscalingv1.Scale) error {
	apps := c.client.AppsV1()
	var err error
	switch ref.Kind {
	case "Deployment":
		_, err = apps.Deployments(ns).UpdateScale(ctx, ref.Name, s, metav1.UpdateOptions{})
	case "ReplicaSet":
		_, err = apps.ReplicaSets(ns).UpdateScale(ctx, ref.Name, s, metav1.UpdateOptions{})
	case "StatefulSet":
		_, err = apps.StatefulSets(ns).UpdateScale(ctx, ref.Name, s, metav1.UpdateOptions{})
	}
	return err
}

// DefaultBehavior is upstream's default: scale up by at most 4 pods or 100% (the more) per
// 15 s with no stabilization; scale down by at most 100% per 15 s after a 300 s window.
func DefaultBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	out := &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	if b != nil {
		out = b.DeepCopy()
	}
	if out.ScaleUp == nil {
		out.ScaleUp = &autoscalingv2.HPAScalingRules{}
	}
	if out.ScaleUp.StabilizationWindowSeconds == nil {
		out.ScaleUp.StabilizationWindowSeconds = ptr.To[int32](0)
	}
	if len(out.ScaleUp.Policies) == 0 {
		out.ScaleUp.Policies = []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}
	}
	if out.ScaleDown == nil {
		out.ScaleDown = &autoscalingv2.HPAScalingRules{}
	}
	if out.ScaleDown.StabilizationWindowSeconds == nil {
		out.ScaleDown.StabilizationWindowSeconds = ptr.To[int32](300)
	}
	if len(out.ScaleDown.Policies) == 0 {
		out.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}
	}
	return out
}

func (c *Controller) reconcile(ctx context.Context, key string, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	now := c.opts.Now()
	st := &hpa.Status
	st.ObservedGeneration = ptr.To(hpa.Generation)
	ref := hpa.Spec.ScaleTargetRef
	scale, err := c.getScale(ctx, hpa.Namespace, ref)
	if err != nil {
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", err), now)
		c.rec.Event(hpa, corev1.EventTypeWarning, "FailedGetScale", err.Error())
		return c.writeStatus(ctx, hpa, err)
	}
	setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale", now)
	current := scale.Status.Replicas
	st.CurrentReplicas = current
	minR := ptr.Deref(hpa.Spec.MinReplicas, 1)
	if scale.Spec.Replicas == 0 && minR != 0 {
		// Scaled to zero by hand: autoscaling is off until someone scales it up again.
		st.DesiredReplicas = 0
		st.CurrentMetrics = nil
		setCondition(st, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero", now)
		return c.writeStatus(ctx, hpa, nil)
	}
	selector, err := labels.Parse(scale.Status.Selector)
	if err != nil || scale.Status.Selector == "" {
		msg := fmt.Sprintf("the target %s %s has no usable label selector in its scale status (%q)", ref.Kind, ref.Name, scale.Status.Selector)
		setCondition(st, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", msg, now)
		return c.writeStatus(ctx, hpa, nil)
	}
	desired, metrics, reason, err := c.recommend(ctx, hpa, scale.Spec.Replicas, selector)
	if err != nil {
		setCondition(st, autoscalingv2.ScalingActive, corev1.ConditionFalse, reason, err.Error(), now)
		c.rec.Event(hpa, corev1.EventTypeWarning, reason, err.Error())
		return c.writeStatus(ctx, hpa, err)
	}
	st.CurrentMetrics = metrics
	setCondition(st, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from "+reasonMetric(hpa), now)

	b := DefaultBehavior(hpa.Spec.Behavior)
	c.mu.Lock()
	recs := prune(c.recs[key], now, 30*time.Minute)
	stab := Stabilize(recs, desired, scale.Spec.Replicas, now,
		time.Duration(*b.ScaleUp.StabilizationWindowSeconds)*time.Second, time.Duration(*b.ScaleDown.StabilizationWindowSeconds)*time.Second)
	c.recs[key] = append(recs, timestamped{at: now, replicas: desired})
	changes := prune(c.changes[key], now, 30*time.Minute)
	c.changes[key] = changes
	c.mu.Unlock()
	final, limit := Bounds(stab, scale.Spec.Replicas, minR, hpa.Spec.MaxReplicas, b, changes, now)
	switch limit {
	case "TooManyReplicas":
		setCondition(st, autoscalingv2.ScalingLimited, corev1.ConditionTrue, limit, "the desired replica count is more than the maximum replica count", now)
	case "TooFewReplicas":
		setCondition(st, autoscalingv2.ScalingLimited, corev1.ConditionTrue, limit, "the desired replica count is less than the minimum replica count", now)
	case "ScaleUpLimit", "ScaleDownLimit":
		setCondition(st, autoscalingv2.ScalingLimited, corev1.ConditionTrue, limit, "the desired replica count is limited by the scaling policies of the HPA's behavior", now)
	default:
		setCondition(st, autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange", "the desired count is within the acceptable range", now)
	}
	if stab != desired && limit == "" {
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation", now)
	}
	st.DesiredReplicas = final
	if final != scale.Spec.Replicas {
		old := scale.Spec.Replicas
		scale.Spec.Replicas = final
		if err := c.updateScale(ctx, hpa.Namespace, ref, scale); err != nil {
			setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err), now)
			c.rec.Event(hpa, corev1.EventTypeWarning, "FailedRescale", err.Error())
			return c.writeStatus(ctx, hpa, err)
		}
		c.mu.Lock()
		c.changes[key] = append(c.changes[key], timestamped{at: now, replicas: final - old})
		c.mu.Unlock()
		st.LastScaleTime = &metav1.Time{Time: now}
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", fmt.Sprintf("the HPA controller was able to update the target scale to %d", final), now)
		direction := "above"
		if final < old {
			direction = "below"
		}
		msg := fmt.Sprintf("New size: %d; reason: %s %s target", final, reasonMetric(hpa), direction)
		c.rec.Event(hpa, corev1.EventTypeNormal, "SuccessfulRescale", msg)
		c.log.Info("rescaled", "hpa", key, "from", old, "to", final)
	}
	return c.writeStatus(ctx, hpa, nil)
}

func reasonMetric(hpa *autoscalingv2.HorizontalPodAutoscaler) string {
	for _, m := range hpa.Spec.Metrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil {
			if m.Resource.Target.Type == autoscalingv2.UtilizationMetricType {
				return fmt.Sprintf("%s resource utilization (percentage of request)", m.Resource.Name)
			}
			return fmt.Sprintf("%s resource", m.Resource.Name)
		}
	}
	return "cpu resource utilization (percentage of request)"
}

// recommend is the highest replica count any metric asks for, with the metrics' current
// values; reason is the condition reason when it fails.
func (c *Controller) recommend(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, current int32, selector labels.Selector) (int32, []autoscalingv2.MetricStatus, string, error) {
	metrics := hpa.Spec.Metrics
	if len(metrics) == 0 { // upstream's default: 80% CPU
		metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}}
	}
	pods, err := c.pods.Pods(hpa.Namespace).List(selector)
	if err != nil {
		return 0, nil, "FailedGetResourceMetric", err
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var best int32 = -1
	var statuses []autoscalingv2.MetricStatus
	for i, m := range metrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil {
			return 0, nil, "InvalidMetricSourceType", fmt.Errorf("spec.metrics[%d]: type %s is not supported (only Resource metrics are)", i, m.Type)
		}
		res := m.Resource.Name
		usage, err := c.metrics.PodUsage(ctx, hpa.Namespace, selector, res)
		if err != nil {
			return 0, nil, "FailedGetResourceMetric", fmt.Errorf("failed to get %s utilization: unable to get metrics for resource %s: %w", res, res, err)
		}
		r, err := ResourceReplicas(current, pods, usage, res, m.Resource.Target)
		if err != nil {
			return 0, nil, "FailedGetResourceMetric", fmt.Errorf("failed to get %s utilization: %w", res, err)
		}
		cur := autoscalingv2.MetricValueStatus{AverageUtilization: r.Utilization, AverageValue: ptr.To(milliQuantity(r.AverageMilli, res))}
		statuses = append(statuses, autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: res, Current: cur}})
		best = max(best, r.Replicas)
	}
	return best, statuses, "", nil
}

func prune(ts []timestamped, now time.Time, keep time.Duration) []timestamped {
	out := ts[:0:0]
	for _, t := range ts {
		if now.Sub(t.at) <= keep {
			out = append(out, t)
		}
	}
	return out
}

// setCondition sets a condition, keeping its transition time when the status is unchanged.
func setCondition(st *autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = metav1.Time{Time: now}
		}
		c.Status, c.Reason, c.Message = s, reason, msg
		return
	}
	st.Conditions = append(st.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.Time{Time: now}})
}

// writeStatus saves the status; cause, when set, is returned after it so the queue retries.
func (c *Controller) writeStatus(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, cause error) error {
	_, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("status of HPA %s/%s: %w", hpa.Namespace, hpa.Name, err)
	}
	if cause != nil {
		return worker.RequeueAfter(c.opts.SyncPeriod)
	}
	return nil
}
