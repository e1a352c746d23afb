// Package job runs a Job's pods to completion, as upstream's Job controller: it keeps up
// to spec.parallelism pods running until spec.completions of them succeeded (or, in
// Indexed mode, one pod per completion index succeeded), replaces failed pods after an
// exponential back-off until spec.backoffLimit, applies spec.podFailurePolicy, fails the
// Job past spec.activeDeadlineSeconds, honours spec.suspend, reports Complete or Failed
// conditions, and deletes finished Jobs after spec.ttlSecondsAfterFinished.
//
// Pods are counted exactly once with upstream's tracking finalizer
// (batch.kubernetes.io/job-tracking): a finished pod keeps the finalizer until its uid is
// written to status.uncountedTerminatedPods (or, for an Indexed Job's success, its index to
// status.completedIndexes); only then is the finalizer removed, and a later pass moves the
// uid into status.succeeded or status.failed. A pod that is deleted or garbage collected
// early is therefore never lost from the counts, and never counted twice.
package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/expectations"
	"github.com/wasmkube/wasmkube/core/controller/podcontrol"
	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/replicaset"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs, metrics and events.
const Name = "job"

// Upstream's names.
const (
	TrackingFinalizer         = "batch.kubernetes.io/job-tracking"
	CompletionIndexAnnotation = "batch.kubernetes.io/job-completion-index"
	CompletionIndexLabel      = "batch.kubernetes.io/job-completion-index"
	CompletionIndexEnv        = "JOB_COMPLETION_INDEX"
)

// orphanPrefix marks queue keys of pods that carry the tracking finalizer but whose Job is
// gone: the controller only removes their finalizer.
const orphanPrefix = "pod:"

// Options of the Job controller. Zero values take upstream's defaults.
type Options struct {
	// BackoffBase is the delay before the first failed pod is replaced, doubled for each
	// further failure up to BackoffMax (defaults 10 s and 6 min).
	BackoffBase, BackoffMax time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Controller is the Job controller.
type Controller struct {
	client    kubernetes.Interface
	jobLister batchlisters.JobLister
	pods      *podcontrol.Pods
	synced    []cache.InformerSynced
	queue     worker.Queue
	exp       *expectations.Expectations
	recorder  record.EventRecorder
	log       *slog.Logger
	opts      Options
	batches   podcontrol.Batches

	// written holds the Job each sync last wrote, so a sync that runs before the informer
	// has seen that write does not act on an older status (it would forget uncounted pods
	// whose finalizer it already removed).
	mu      sync.Mutex
	written map[string]*batchv1.Job
}

// New wires the controller to the factory's Job and Pod informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, opts Options, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 10 * time.Second
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = 6 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	jobInf := f.Batch().V1().Jobs()
	pods, err := podcontrol.NewPods(client, f.Core().V1().Pods())
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client: client, jobLister: jobInf.Lister(), pods: pods,
		synced:   []cache.InformerSynced{jobInf.Informer().HasSynced, pods.Synced},
		queue:    worker.NewQueue(Name),
		exp:      expectations.New(),
		recorder: recorder, log: log.With("controller", Name), opts: opts,
		written: map[string]*batchv1.Job{},
	}
	if _, err := jobInf.Informer().AddEventHandler(podcontrol.OwnerHandler(c.queue, c.exp, func(key string) {
		c.mu.Lock()
		delete(c.written, key)
		c.mu.Unlock()
		c.batches.Forget(key)
	})); err != nil {
		return nil, err
	}
	events := &podcontrol.Events[*batchv1.Job]{
		Kind: "Job", Queue: c.queue, Expectations: c.exp,
		Get:      func(ns, name string) (*batchv1.Job, error) { return c.jobLister.Jobs(ns).Get(name) },
		List:     func(ns string) ([]*batchv1.Job, error) { return c.jobLister.Jobs(ns).List(labels.Everything()) },
		Selector: func(j *batchv1.Job) *metav1.LabelSelector { return j.Spec.Selector },
		// A pod that still carries the tracking finalizer of a Job that is gone: only
		// its finalizer is removed.
		Gone: func(obj metav1.Object) {
			if p, ok := obj.(*corev1.Pod); ok && hasFinalizer(p) {
				c.queue.Add(orphanPrefix + p.Namespace + "/" + p.Name)
			}
		},
	}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(events.Handler()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles Jobs with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func hasFinalizer(p *corev1.Pod) bool {
	for _, f := range p.Finalizers {
		if f == TrackingFinalizer {
			return true
		}
	}
	return false
}

// current returns the newer of the cached Job and the one this controller last wrote.
func (c *Controller) current(key string, cached *batchv1.Job) *batchv1.Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.written[key]
	if w == nil || w.UID != cached.UID {
		delete(c.written, key)
		return cached
	}
	a, _ := strconv.ParseInt(cached.ResourceVersion, 10, 64)
	b, _ := strconv.ParseInt(w.ResourceVersion, 10, 64)
	if b > a {
		return w
	}
	delete(c.written, key)
	return cached
}

func (c *Controller) sync(ctx context.Context, key string) error {
	if strings.HasPrefix(key, orphanPrefix) {
		return c.releaseOrphan(ctx, strings.TrimPrefix(key, orphanPrefix))
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	job := c.current(key, cached)
	now := c.opts.Now()
	if Finished(job) {
		return c.expire(ctx, job, now)
	}
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil || sel.Empty() {
		c.recorder.Eventf(job, corev1.EventTypeWarning, "InvalidSelector", "spec.selector is invalid or empty: %v", err)
		return nil
	}
	satisfied := c.exp.Satisfied(key)
	pods, err := c.claimPods(ctx, job, sel)
	if err != nil {
		return err
	}
	p := Plan(job, pods, now, c.opts)
	// The pods the plan creates or deletes are independent of the counting below (the
	// status already includes them), so both go on at once: a pass costs the longer of
	// the two, not their sum, and finished pods are counted without waiting for the
	// slow start of their replacements.
	acted := make(chan error, 1)
	if satisfied && job.DeletionTimestamp == nil {
		go func() { acted <- c.act(ctx, key, job, p) }()
	} else {
		acted <- nil
	}
	statusErr := c.writeStatus(ctx, key, job, p.Status)
	if statusErr == nil {
		// Finalizers come off only once the status that counts their pods is stored.
		statusErr = c.removeFinalizers(ctx, p.Release)
	}
	manageErr := <-acted
	if statusErr != nil {
		if apierrors.IsConflict(statusErr) {
			// Someone else changed the Job: look again soon, without the failure back-off
			// (which grows per key and would stall a busy Job), and keep the finalizers.
			return worker.RequeueAfter(20 * time.Millisecond)
		}
		return errors.Join(statusErr, manageErr)
	}
	c.emit(job, p)
	if manageErr != nil {
		return manageErr
	}
	if p.RequeueAfter > 0 {
		return worker.RequeueAfter(p.RequeueAfter)
	}
	return nil
}

func (c *Controller) emit(job *batchv1.Job, p *Decision) {
	for _, ev := range p.Events {
		typ := corev1.EventTypeNormal
		if ev.warning {
			typ = corev1.EventTypeWarning
		}
		c.recorder.Event(job, typ, ev.reason, ev.message)
	}
}

func (c *Controller) claimPods(ctx context.Context, job *batchv1.Job, sel labels.Selector) ([]*corev1.Pod, error) {
	return c.pods.Claim(ctx, job, podstate.ControllerRef(job, "batch/v1", "Job"), sel, nil)
}

// act creates and deletes the pods the plan asks for.
func (c *Controller) act(ctx context.Context, key string, job *batchv1.Job, p *Decision) error {
	var errs []error
	errs = append(errs, podcontrol.DeletePods(ctx, c.client, c.recorder, c.exp, key, job, p.Delete)...)
	if n := len(p.Create); n > 0 {
		c.exp.ExpectCreations(key, n)
		next := make(chan int, n)
		for _, ix := range p.Create {
			next <- ix
		}
		close(next)
		created, err := replicaset.SlowStart(n, c.batches.Initial(key, n), func() error { return c.createPod(ctx, job, <-next) })
		c.batches.Done(key, created, err)
		for range n - created {
			c.exp.CreationObserved(key)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) createPod(ctx context.Context, job *batchv1.Job, index int) error {
	p, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, PodFromTemplate(job, index), metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return err
		}
		c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return fmt.Errorf("create pod for job %s/%s: %w", job.Namespace, job.Name, err)
	}
	c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", p.Name)
	return nil
}

// PodFromTemplate is the pod job creates; index is its completion index (-1 for a
// NonIndexed Job). Indexed pods are named <job>-<index>-<suffix>, carry the index as
// annotation, label and JOB_COMPLETION_INDEX, and get the hostname <job>-<index>.
func PodFromTemplate(job *batchv1.Job, index int) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    job.Name + "-",
			Namespace:       job.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      append(t.Finalizers, TrackingFinalizer),
			OwnerReferences: []metav1.OwnerReference{podstate.ControllerRef(job, "batch/v1", "Job")},
		},
		Spec: t.Spec,
	}
	if index < 0 {
		return p
	}
	ix := strconv.Itoa(index)
	p.GenerateName = job.Name + "-" + ix + "-"
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[CompletionIndexAnnotation] = ix
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[CompletionIndexLabel] = ix
	if p.Spec.Hostname == "" {
		p.Spec.Hostname = job.Name + "-" + ix
	}
	env := corev1.EnvVar{Name: CompletionIndexEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: fmt.Sprintf("metadata.annotations['%s']", CompletionIndexAnnotation)}}}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			has := false
			for _, e := range cs[i].Env {
				has = has || e.Name == CompletionIndexEnv
			}
			if !has {
				cs[i].Env = append(cs[i].Env, env)
			}
		}
	}
	return p
}

func (c *Controller) writeStatus(ctx context.Context, key string, job *batchv1.Job, st batchv1.JobStatus) error {
	if equality.Semantic.DeepEqual(job.Status, st) {
		return nil
	}
	cp := job.DeepCopy()
	cp.Status = st
	out, err := c.client.BatchV1().Jobs(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		// A conflict must be retried before any finalizer is removed.
		return fmt.Errorf("update status of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	c.mu.Lock()
	c.written[key] = out
	c.mu.Unlock()
	return nil
}

func (c *Controller) removeFinalizers(ctx context.Context, pods []*corev1.Pod) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.removeFinalizer(ctx, p); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// removeFinalizer takes the tracking finalizer off p with a patch that carries p's uid
// and resourceVersion (a pod that changed meanwhile is looked at again on the next pass).
func (c *Controller) removeFinalizer(ctx context.Context, p *corev1.Pod) error {
	fins := []string{}
	for _, f := range p.Finalizers {
		if f != TrackingFinalizer {
			fins = append(fins, f)
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": p.UID, "resourceVersion": p.ResourceVersion, "finalizers": fins}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	// A conflict means the pod changed since it was listed: its update event queues the Job
	// again, and the next pass releases it from the newer version.
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("remove finalizer of pod %s/%s: %w", p.Namespace, p.Name, err)
}

// releaseOrphan removes the tracking finalizer of a pod whose Job is gone, after
// checking with the API server that it is.
func (c *Controller) releaseOrphan(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	p, err := c.pods.Lister().Pods(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !hasFinalizer(p)) {
		return nil
	}
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		j, err := c.client.BatchV1().Jobs(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil && j.UID == ref.UID {
			c.queue.Add(ns + "/" + j.Name)
			return nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return c.removeFinalizer(ctx, p)
}

// expire deletes a finished Job once its ttlSecondsAfterFinished has passed (upstream's
// TTL-after-finished controller), in the foreground so its pods go first.
func (c *Controller) expire(ctx context.Context, job *batchv1.Job, now time.Time) error {
	if job.Spec.TTLSecondsAfterFinished == nil || job.DeletionTimestamp != nil {
		return nil
	}
	at, ok := finishTime(job)
	if !ok {
		return nil
	}
	if wait := at.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second).Sub(now); wait > 0 {
		return worker.RequeueAfter(wait)
	}
	fg := metav1.DeletePropagationForeground
	err := c.client.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		PropagationPolicy: &fg, Preconditions: &metav1.Preconditions{UID: &job.UID, ResourceVersion: &job.ResourceVersion}})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		if err == nil {
			c.log.Info("deleted finished job after its TTL", "job", job.Namespace+"/"+job.Name)
		}
		return nil
	}
	return fmt.Errorf("delete expired job %s/%s: %w", job.Namespace, job.Name, err)
}

func finishTime(job *batchv1.Job) (time.Time, bool) {
	for _, cond := range job.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			if job.Status.CompletionTime != nil && cond.Type == batchv1.JobComplete {
				return job.Status.CompletionTime.Time, true
			}
			return cond.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// Finished reports whether the Job has its Complete or Failed condition.
func Finished(job *batchv1.Job) bool {
	_, ok := finishTime(job)
	return ok
}
