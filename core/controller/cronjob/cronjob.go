// Package cronjob creates Jobs on a CronJob's schedule, as upstream's CronJob controller
// (v2): at each scheduled time (in spec.timeZone, or the controller's local zone) it creates
// the Job <cronjob>-<minutes since the epoch> from spec.jobTemplate, unless the CronJob is
// suspended, the time is older than spec.startingDeadlineSeconds, or concurrencyPolicy
// Forbid finds a Job still running (Replace deletes it instead). It keeps status.active,
// lastScheduleTime and lastSuccessfulTime, and deletes finished Jobs beyond the history
// limits. Schedules are parsed by github.com/robfig/cron/v3, the library upstream uses.
package cronjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
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
	"k8s.io/utils/clock"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs, metrics and events.
const Name = "cronjob"

// ScheduledTimestampAnnotation is set on each Job to its scheduled time (RFC 3339, in the
// CronJob's time zone), as upstream.
const ScheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// tooManyMissed is upstream's bound on missed start times before it warns.
const tooManyMissed = 100

// Controller is the CronJob controller.
type Controller struct {
	client    kubernetes.Interface
	cjLister  batchlisters.CronJobLister
	jobLister batchlisters.JobLister
	synced    []cache.InformerSynced
	queue     worker.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	clock     clock.WithTicker
}

// New wires the controller to the factory's CronJob and Job informers; clk (nil: the real
// clock) is the time schedules are compared with and the clock of the queue's delays.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, clk clock.WithTicker, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	cjInf := f.Batch().V1().CronJobs()
	jobInf := f.Batch().V1().Jobs()
	c := &Controller{
		client: client, cjLister: cjInf.Lister(), jobLister: jobInf.Lister(),
		synced:   []cache.InformerSynced{cjInf.Informer().HasSynced, jobInf.Informer().HasSynced},
		queue:    worker.NewQueueWithClock(Name, clk),
		recorder: recorder, log: log.With("controller", Name), clock: clk,
	}
	if _, err := cjInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, n any) { c.enqueue(n) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	onJob := func(obj any) {
		j, ok := obj.(*batchv1.Job)
		if !ok {
			return
		}
		if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.Kind == "CronJob" {
			c.queue.Add(j.Namespace + "/" + ref.Name)
		}
	}
	if _, err := jobInf.Informer().AddEventHandler(worker.OnEvery(onJob)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles CronJobs with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// Schedule parses a CronJob's schedule in its time zone (nil: the local zone).
func Schedule(cj *batchv1.CronJob) (cron.Schedule, *time.Location, error) {
	loc := time.Local
	if cj.Spec.TimeZone != nil {
		l, err := time.LoadLocation(*cj.Spec.TimeZone)
		if err != nil {
			return nil, nil, fmt.Errorf("cronjob %s/%s: spec.timeZone %q: %w", cj.Namespace, cj.Name, *cj.Spec.TimeZone, err)
		}
		loc = l
	}
	s, err := cron.ParseStandard(cj.Spec.Schedule)
	if err != nil {
		return nil, nil, fmt.Errorf("cronjob %s/%s: spec.schedule %q: %w", cj.Namespace, cj.Name, cj.Spec.Schedule, err)
	}
	return s, loc, nil
}

// MostRecent returns the latest scheduled time after the CronJob's last one (or its
// creation, or now minus startingDeadlineSeconds, whichever is later) and not after now,
// and how many times were missed in all; ok is false when none is due.
func MostRecent(cj *batchv1.CronJob, s cron.Schedule, loc *time.Location, now time.Time) (t time.Time, missed int, ok bool) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if sd := cj.Spec.StartingDeadlineSeconds; sd != nil {
		if d := now.Add(-time.Duration(*sd) * time.Second); d.After(earliest) {
			earliest = d
		}
	}
	for next := s.Next(earliest.In(loc)); !next.After(now); next = s.Next(next) {
		t, ok = next, true
		missed++
		if missed > 10*tooManyMissed {
			// Upstream stops counting too; the most recent time is computed directly.
			break
		}
	}
	if missed > 10*tooManyMissed {
		// Step from a point close to now instead of walking every missed minute.
		for next := s.Next(now.Add(-48 * time.Hour).In(loc)); !next.After(now); next = s.Next(next) {
			t = next
		}
	}
	return t, missed, ok
}

// JobName is the Job created for scheduled time t: the CronJob's name and t in minutes.
func JobName(cj *batchv1.CronJob, t time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, t.Unix()/60)
}

func finished(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.cjLister.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cj := cached.DeepCopy()
	all, err := c.jobLister.Jobs(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var jobs []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.UID == cj.UID {
			jobs = append(jobs, j)
		}
	}
	now := c.clock.Now()
	c.trackActive(cj, jobs)
	var errs []error
	if err := c.cleanupHistory(ctx, cj, jobs); err != nil {
		errs = append(errs, err)
	}
	requeue, err := c.schedule(ctx, cj, jobs, now)
	if err != nil {
		errs = append(errs, err)
	}
	if !equality.Semantic.DeepEqual(cached.Status, cj.Status) {
		if _, err := c.client.BatchV1().CronJobs(ns).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("update status of cronjob %s: %w", key, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if requeue > 0 {
		return worker.RequeueAfter(requeue)
	}
	return nil
}

// trackActive makes status.active the CronJob's running Jobs and notes the latest success.
func (c *Controller) trackActive(cj *batchv1.CronJob, jobs []*batchv1.Job) {
	byUID := map[types.UID]*batchv1.Job{}
	for _, j := range jobs {
		byUID[j.UID] = j
	}
	var active []corev1.ObjectReference
	listed := map[types.UID]bool{}
	for _, ref := range cj.Status.Active {
		j := byUID[ref.UID]
		if j == nil {
			continue // gone
		}
		if t, done := finished(j); done {
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %s", j.Name, t)
			continue
		}
		listed[ref.UID] = true
		active = append(active, ref)
	}
	for _, j := range jobs {
		if _, done := finished(j); !done && !listed[j.UID] && j.DeletionTimestamp == nil {
			active = append(active, jobRef(j))
		}
		if t, done := finished(j); done && t == batchv1.JobComplete && j.Status.CompletionTime != nil {
			if cj.Status.LastSuccessfulTime == nil || j.Status.CompletionTime.After(cj.Status.LastSuccessfulTime.Time) {
				ct := *j.Status.CompletionTime
				cj.Status.LastSuccessfulTime = &ct
			}
		}
	}
	cj.Status.Active = active
}

func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID,
		APIVersion: "batch/v1", ResourceVersion: j.ResourceVersion}
}

// schedule creates the Job due now, if any, and returns when the next time is due.
func (c *Controller) schedule(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job, now time.Time) (time.Duration, error) {
	if cj.DeletionTimestamp != nil {
		return 0, nil
	}
	s, loc, err := Schedule(cj)
	if err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "%v", err)
		return 0, nil // a fixed spec queues the CronJob again
	}
	// Look again just after the next time (a little late rather than early).
	requeue := s.Next(now.In(loc)).Sub(now) + 100*time.Millisecond
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return requeue, nil
	}
	t, missed, ok := MostRecent(cj, s, loc, now)
	if !ok {
		return requeue, nil
	}
	if missed > tooManyMissed {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	if sd := cj.Spec.StartingDeadlineSeconds; sd != nil && t.Add(time.Duration(*sd)*time.Second).Before(now) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", t.UTC().Format(time.RFC1123Z))
		return requeue, nil
	}
	name := JobName(cj, t)
	for _, j := range jobs {
		if j.Name == name {
			return requeue, nil // already created (the status write may have been lost)
		}
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			// Upstream waits for the running Job and starts this time's Job when it ends,
			// as long as the time is within the starting deadline.
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return requeue, nil
		}
	case batchv1.ReplaceConcurrent:
		bg := metav1.DeletePropagationBackground
		for _, ref := range cj.Status.Active {
			err := c.client.BatchV1().Jobs(cj.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
			if err != nil && !apierrors.IsNotFound(err) {
				c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
				return 0, fmt.Errorf("replace job %s/%s: %w", cj.Namespace, ref.Name, err)
			}
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %s", ref.Name)
		}
		cj.Status.Active = nil
	}
	j, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, JobFromTemplate(cj, t, loc), metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return requeue, nil
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return 0, fmt.Errorf("create job for cronjob %s/%s: %w", cj.Namespace, cj.Name, err)
	}
	c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %s", j.Name)
	cj.Status.Active = append(cj.Status.Active, jobRef(j))
	lt := metav1.NewTime(t)
	cj.Status.LastScheduleTime = &lt
	return requeue, nil
}

// JobFromTemplate is the Job cj creates for scheduled time t.
func JobFromTemplate(cj *batchv1.CronJob, t time.Time, loc *time.Location) *batchv1.Job {
	tmpl := cj.Spec.JobTemplate.DeepCopy()
	ann := tmpl.Annotations
	if ann == nil {
		ann = map[string]string{}
	}
	ann[ScheduledTimestampAnnotation] = t.In(loc).Format(time.RFC3339)
	yes := true
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: JobName(cj, t), Namespace: cj.Namespace, Labels: tmpl.Labels, Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: tmpl.Spec,
	}
}

// cleanupHistory deletes the oldest finished Jobs beyond the history limits.
func (c *Controller) cleanupHistory(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) error {
	var ok, failed []*batchv1.Job
	for _, j := range jobs {
		if j.DeletionTimestamp != nil {
			continue
		}
		switch t, done := finished(j); {
		case done && t == batchv1.JobComplete:
			ok = append(ok, j)
		case done:
			failed = append(failed, j)
		}
	}
	var errs []error
	for _, h := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{ok, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if h.limit == nil || len(h.jobs) <= int(*h.limit) {
			continue
		}
		sort.Slice(h.jobs, func(a, b int) bool { return startOf(h.jobs[a]).Before(startOf(h.jobs[b])) })
		bg := metav1.DeletePropagationBackground
		for _, j := range h.jobs[:len(h.jobs)-int(*h.limit)] {
			err := c.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{
				PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &j.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("delete old job %s/%s: %w", j.Namespace, j.Name, err))
				continue
			}
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %s", j.Name)
		}
	}
	return errors.Join(errs...)
}

func startOf(j *batchv1.Job) time.Time {
	if j.Status.StartTime != nil {
		return j.Status.StartTime.Time
	}
	return j.CreationTimestamp.Time
}
