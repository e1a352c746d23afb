package job

import (
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/replicaset"
)

type event struct {
	warning         bool
	reason, message string
}

// Decision is what one pass does for a Job: the status to store, the pods to create
// (by completion index, -1 when NonIndexed) and delete, the pods whose tracking finalizer
// comes off once the status is stored, the events, and when to look again.
type Decision struct {
	Status       batchv1.JobStatus
	Create       []int
	Delete       []*corev1.Pod
	Release      []*corev1.Pod
	Events       []event
	RequeueAfter time.Duration
}

func (d *Decision) requeue(after time.Duration) {
	if after > 0 && (d.RequeueAfter == 0 || after < d.RequeueAfter) {
		d.RequeueAfter = after
	}
}

// Upstream's condition reasons and messages.
const (
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonPodFailurePolicy     = "PodFailurePolicy"
	ReasonCompletionsReached   = "CompletionsReached"
)

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

// IndexOf returns a pod's completion index, or -1.
func IndexOf(p *corev1.Pod) int {
	v, ok := p.Annotations[CompletionIndexAnnotation]
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return -1
	}
	return i
}

func condition(st *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func isTrue(c *batchv1.JobCondition) bool { return c != nil && c.Status == corev1.ConditionTrue }

// setCondition sets condition t to status, keeping its transition time when nothing changed.
func setCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) {
	nt := metav1.NewTime(now)
	if c := condition(st, t); c != nil {
		if c.Status != status || c.Reason != reason || c.Message != msg {
			c.Status, c.Reason, c.Message, c.LastProbeTime, c.LastTransitionTime = status, reason, msg, nt, nt
		}
		return
	}
	st.Conditions = append(st.Conditions, batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: msg, LastProbeTime: nt, LastTransitionTime: nt})
}

// failureTime is when a failed pod failed: its last container exit, or its deletion.
func failureTime(p *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.State.Terminated != nil && cs.State.Terminated.FinishedAt.After(t) {
			t = cs.State.Terminated.FinishedAt.Time
		}
	}
	if t.IsZero() && p.DeletionTimestamp != nil {
		t = p.DeletionTimestamp.Time
	}
	if t.IsZero() {
		t = p.CreationTimestamp.Time
	}
	return t
}

// Backoff is the delay before a Job that has failed `failures` times creates a pod
// again: base doubled per further failure, at most max.
func Backoff(failures int32, base, max time.Duration) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := base
	for i := int32(1); i < failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// MatchFailurePolicy returns the action of the first podFailurePolicy rule a failed pod
// matches, with upstream's message, or "" when none does (the failure counts).
func MatchFailurePolicy(job *batchv1.Job, p *corev1.Pod) (batchv1.PodFailurePolicyAction, string) {
	if job.Spec.PodFailurePolicy == nil {
		return "", ""
	}
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for i, r := range job.Spec.PodFailurePolicy.Rules {
		if ec := r.OnExitCodes; ec != nil {
			for _, cs := range statuses {
				term := cs.State.Terminated
				if term == nil || term.ExitCode == 0 || (ec.ContainerName != nil && *ec.ContainerName != cs.Name) {
					continue
				}
				in := false
				for _, v := range ec.Values {
					in = in || v == term.ExitCode
				}
				if in == (ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) {
					return r.Action, fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
						cs.Name, p.Namespace, p.Name, term.ExitCode, r.Action, i)
				}
			}
		}
		for _, pat := range r.OnPodConditions {
			for _, pc := range p.Status.Conditions {
				if pc.Type == pat.Type && pc.Status == pat.Status {
					return r.Action, fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d", p.Namespace, p.Name, pat.Type, r.Action, i)
				}
			}
		}
	}
	return "", ""
}

// Plan decides one pass over a Job that has not finished, from its pods. It is pure.
func Plan(job *batchv1.Job, pods []*corev1.Pod, now time.Time, o Options) *Decision {
	d := &Decision{}
	st := job.Status.DeepCopy()
	indexed := isIndexed(job)
	completions := -1
	if job.Spec.Completions != nil {
		completions = int(*job.Spec.Completions)
	}
	parallelism := 1
	if job.Spec.Parallelism != nil {
		parallelism = int(*job.Spec.Parallelism)
	}
	backoffLimit := int32(6)
	if job.Spec.BackoffLimit != nil {
		backoffLimit = *job.Spec.BackoffLimit
	}
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		byUID[p.UID] = p
	}

	// 1. Uncounted pods whose finalizer is gone (or that are gone) are counted now.
	var keepS, keepF []types.UID
	recorded := map[types.UID]bool{}
	if u := st.UncountedTerminatedPods; u != nil {
		for _, uid := range u.Succeeded {
			if p := byUID[uid]; p != nil && hasFinalizer(p) {
				keepS, recorded[uid] = append(keepS, uid), true
			} else {
				st.Succeeded++
			}
		}
		for _, uid := range u.Failed {
			if p := byUID[uid]; p != nil && hasFinalizer(p) {
				keepF, recorded[uid] = append(keepF, uid), true
			} else {
				st.Failed++
			}
		}
	}

	// 2. Finished pods still carrying the finalizer are recorded (and then released).
	completed := ParseIndexes(st.CompletedIndexes, max(completions, 0))
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	// Pods this controller deletes because the Job is suspended or has succeeded are not
	// failures. Those it deletes because the Job is failing (activeDeadlineSeconds, the
	// back-off limit, a FailJob rule) are: upstream counts every pod that had not
	// terminated when the Job failed as failed, so a Job past its deadline reports the
	// pods it lost in status.failed.
	failing := isTrue(condition(st, batchv1.JobFailureTarget))
	quiet := !failing && (suspended || isTrue(condition(st, batchv1.JobSuccessCriteriaMet)))
	var failJob *event
	var lastFailure time.Time
	var active []*corev1.Pod
	var terminating, ready, restarts int32
	for _, p := range pods {
		succeeded := p.Status.Phase == corev1.PodSucceeded
		// A pod deleted while the Job runs counts as failed at once, unless a podFailurePolicy
		// must see how it ends (upstream waits for its terminal phase then).
		failed := p.Status.Phase == corev1.PodFailed ||
			(p.DeletionTimestamp != nil && !succeeded && !quiet && (failing || job.Spec.PodFailurePolicy == nil))
		switch {
		case podstate.IsActive(p):
			active = append(active, p)
			if podstate.IsReady(p) {
				ready++
			}
			for _, cs := range p.Status.ContainerStatuses {
				restarts += cs.RestartCount
			}
		case p.DeletionTimestamp != nil && !succeeded && p.Status.Phase != corev1.PodFailed:
			terminating++
		}
		if failed {
			if t := failureTime(p); t.After(lastFailure) {
				lastFailure = t
			}
		}
		if !hasFinalizer(p) {
			continue
		}
		if !succeeded && !failed {
			if quiet && p.DeletionTimestamp != nil {
				d.Release = append(d.Release, p)
			}
			continue
		}
		d.Release = append(d.Release, p)
		if recorded[p.UID] {
			continue
		}
		if succeeded {
			if !indexed {
				keepS = append(keepS, p.UID)
			} else if ix := IndexOf(p); ix >= 0 && ix < completions {
				completed = completed.With(ix)
			}
			continue
		}
		action, msg := MatchFailurePolicy(job, p)
		switch action {
		case batchv1.PodFailurePolicyActionIgnore:
			continue // not counted towards the back-off limit
		case batchv1.PodFailurePolicyActionFailJob:
			if failJob == nil {
				failJob = &event{warning: true, reason: ReasonPodFailurePolicy, message: msg}
			}
		}
		keepF = append(keepF, p.UID)
	}
	st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: keepS, Failed: keepF}
	succeededTotal := int(st.Succeeded) + len(keepS)
	if indexed {
		st.CompletedIndexes = completed.String()
		st.Succeeded = int32(len(completed))
		succeededTotal = len(completed)
	}
	failedTotal := st.Failed + int32(len(keepF))

	// 3. The Job's fate: a failure or success, once decided, is kept while its pods go.
	target := condition(st, batchv1.JobFailureTarget)
	met := condition(st, batchv1.JobSuccessCriteriaMet)
	if !isTrue(target) && !isTrue(met) {
		startedFor := time.Duration(-1)
		if st.StartTime != nil && !suspended {
			startedFor = now.Sub(st.StartTime.Time)
		}
		switch {
		case failJob != nil:
			setCondition(st, batchv1.JobFailureTarget, corev1.ConditionTrue, failJob.reason, failJob.message, now)
		case failedTotal > backoffLimit ||
			(job.Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && failedTotal+restarts > backoffLimit):
			setCondition(st, batchv1.JobFailureTarget, corev1.ConditionTrue, ReasonBackoffLimitExceeded, "Job has reached the specified backoff limit", now)
		case job.Spec.ActiveDeadlineSeconds != nil && startedFor >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second:
			setCondition(st, batchv1.JobFailureTarget, corev1.ConditionTrue, ReasonDeadlineExceeded, "Job was active longer than specified deadline", now)
		case (indexed && len(completed) >= completions) ||
			(!indexed && completions >= 0 && succeededTotal >= completions) ||
			(!indexed && completions < 0 && succeededTotal > 0 && len(active) == 0):
			setCondition(st, batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, ReasonCompletionsReached, "Reached expected number of succeeded pods", now)
		}
		target, met = condition(st, batchv1.JobFailureTarget), condition(st, batchv1.JobSuccessCriteriaMet)
	}

	switch {
	case isTrue(target) || isTrue(met):
		d.Delete = active
		// The final condition waits until no pod runs and every pod is counted.
		if len(active) == 0 && terminating == 0 && len(keepS)+len(keepF) == 0 && len(d.Release) == 0 {
			if isTrue(target) {
				setCondition(st, batchv1.JobFailed, corev1.ConditionTrue, target.Reason, target.Message, now)
				d.Events = append(d.Events, event{warning: true, reason: target.Reason, message: target.Message})
			} else {
				setCondition(st, batchv1.JobComplete, corev1.ConditionTrue, met.Reason, met.Message, now)
				t := metav1.NewTime(now)
				st.CompletionTime = &t
				d.Events = append(d.Events, event{reason: "Completed", message: "Job completed"})
			}
		}
	case suspended:
		d.Delete = active
		if c := condition(st, batchv1.JobSuspended); !isTrue(c) {
			setCondition(st, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now)
			d.Events = append(d.Events, event{reason: "Suspended", message: "Job suspended"})
		}
	default:
		if c := condition(st, batchv1.JobSuspended); isTrue(c) {
			setCondition(st, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now)
			d.Events = append(d.Events, event{reason: "Resumed", message: "Job resumed"})
			st.StartTime = nil // the deadline counts from the resumption, as upstream
		}
		if st.StartTime == nil {
			t := metav1.NewTime(now)
			st.StartTime = &t
		}
		if ads := job.Spec.ActiveDeadlineSeconds; ads != nil {
			d.requeue(st.StartTime.Add(time.Duration(*ads) * time.Second).Sub(now))
		}
		canCreate := true
		if failedTotal > 0 && !lastFailure.IsZero() {
			if wait := lastFailure.Add(Backoff(failedTotal, o.BackoffBase, o.BackoffMax)).Sub(now); wait > 0 {
				canCreate = false
				d.requeue(wait)
			}
		}
		if indexed {
			planIndexed(d, active, completed, completions, parallelism, canCreate)
		} else {
			planNonIndexed(d, active, succeededTotal, completions, parallelism, canCreate)
		}
	}

	st.Active = int32(len(active) - len(d.Delete) + len(d.Create))
	st.Ready = &ready
	st.Terminating = &terminating
	d.Status = *st
	return d
}

func planNonIndexed(d *Decision, active []*corev1.Pod, succeeded, completions, parallelism int, canCreate bool) {
	if completions < 0 && succeeded > 0 {
		return // a work queue: once one pod succeeded, the rest finish on their own
	}
	want := parallelism
	if completions >= 0 {
		want = min(parallelism, completions-succeeded)
	}
	want = max(want, 0)
	switch {
	case len(active) > want:
		d.Delete = podstate.ForDeletion(active, len(active)-want)
	case len(active) < want && canCreate:
		for range min(want-len(active), replicaset.BurstReplicas) {
			d.Create = append(d.Create, -1)
		}
	}
}

func planIndexed(d *Decision, active []*corev1.Pod, completed Indexes, completions, parallelism int, canCreate bool) {
	running := map[int]bool{}
	kept := 0
	for _, p := range active {
		ix := IndexOf(p)
		// Pods without a valid index, of a completed index, or a second one of an index go.
		if ix < 0 || ix >= completions || completed.Has(ix) || running[ix] {
			d.Delete = append(d.Delete, p)
			continue
		}
		running[ix] = true
		kept++
	}
	if kept > parallelism {
		extra := podstate.ForDeletion(keptPods(active, d.Delete), kept-parallelism)
		d.Delete = append(d.Delete, extra...)
		return
	}
	if !canCreate {
		return
	}
	room := min(parallelism-kept, replicaset.BurstReplicas)
	for ix := 0; ix < completions && room > 0; ix++ {
		if !completed.Has(ix) && !running[ix] {
			d.Create = append(d.Create, ix)
			room--
		}
	}
}

func keptPods(active, deleted []*corev1.Pod) []*corev1.Pod {
	gone := map[types.UID]bool{}
	for _, p := range deleted {
		gone[p.UID] = true
	}
	var out []*corev1.Pod
	for _, p := range active {
		if !gone[p.UID] {
			out = append(out, p)
		}
	}
	return out
}
