package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/defaultbinder"
	"github.com/wasmkube/wasmkube/core/scheduler/queue"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

// Results of a scheduling attempt, as upstream's metric labels.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// scheduleOne runs one scheduling cycle for a popped pod and, on success, starts its
// binding cycle in a goroutine. The profile set is read once at the start, so a config
// reload takes effect between cycles, never inside one.
func (s *Scheduler) scheduleOne(ctx context.Context, qp *queue.QueuedPodInfo) {
	pod := qp.Pod
	ps := s.acquireProfiles()
	handedOff := false
	defer func() {
		if !handedOff {
			ps.release()
		}
	}()
	name := pod.Spec.SchedulerName
	if name == "" {
		name = "default-scheduler"
	}
	fwk, ok := ps.frameworks[name]
	if !ok || pod.DeletionTimestamp != nil || s.cache.IsAssumedPod(pod) {
		s.queue.Done(pod.UID)
		return
	}
	start := time.Now()
	s.cache.UpdateSnapshot(s.snapshot)
	state := framework.NewCycleState()
	res, err := fwk.SchedulePod(ctx, state, pod)
	if res.Batch != "" {
		s.metrics.batch.WithLabelValues(fwk.ProfileName(), res.Batch).Inc()
	}
	if err != nil {
		s.handleFailure(ctx, fwk, state, qp, err, res.EvaluatedNodes, start)
		return
	}
	host := res.SuggestedHost
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = host
	if err := s.cache.AssumePod(assumed); err != nil {
		s.handleFailure(ctx, fwk, state, qp, err, 0, start)
		return
	}
	if st := fwk.RunReservePluginsReserve(ctx, state, assumed, host); !st.IsSuccess() {
		fwk.RunReservePluginsUnreserve(ctx, state, assumed, host)
		_ = s.cache.ForgetPod(assumed)
		s.handleFailure(ctx, fwk, state, qp, statusError(st), 0, start)
		return
	}
	// Permit runs here, in the scheduling cycle, as upstream: a gang's later member must
	// see the earlier ones waiting. A Wait is served by the binding cycle (WaitOnPermit).
	st := fwk.RunPermitPlugins(ctx, state, assumed, host)
	if !st.IsSuccess() && !st.IsWait() {
		fwk.RunReservePluginsUnreserve(ctx, state, assumed, host)
		_ = s.cache.ForgetPod(assumed)
		s.handleFailure(ctx, fwk, state, qp, fmt.Errorf("binding rejected: %w", statusError(st)), 0, start)
		return
	}
	if st.IsWait() {
		s.activateGroup(pod)
	}
	if e := res.Explanation; e != nil {
		fwk.Annotate(e, state)
		e.Node = host
		// Ties are broken at random; list the chosen node first among equals.
		for i := range e.Top {
			if e.Top[i].Node == host && e.Top[i].Total == e.Top[0].Total {
				e.Top[0], e.Top[i] = e.Top[i], e.Top[0]
				break
			}
		}
		// The explanation travels with the Binding (pods/binding, which users' policies
		// on pods do not match, as upstream's webhook rules), whose annotations the API
		// server copies onto the pod: no write of the pod itself.
		if b, err := json.Marshal(e); err == nil {
			state.Write(defaultbinder.AnnotationsKey, defaultbinder.Annotations{ExplainAnnotation: string(b)})
		}
	}
	s.recordAttempt(qp, fwk.ProfileName(), res.Explanation, explorerv1.ResultScheduled, host, "", nil, start)
	s.bindWG.Add(1)
	handedOff = true // the binding cycle uses fwk's plugins: it releases the set
	go func() {
		defer s.bindWG.Done()
		defer ps.release()
		s.bind(ctx, fwk, state, qp, assumed, host, start)
	}()
}

// acquireProfiles returns the profile set in force with a reference for one cycle.
func (s *Scheduler) acquireProfiles() *profileSet {
	for {
		if ps := s.profiles.Load(); ps.acquire() {
			return ps
		}
		// Retired between the load and the acquire: its replacement is already stored.
	}
}

// statusError keeps a rejection's reasons readable as an error.
func statusError(st *framework.Status) error {
	if st.IsRejected() {
		return &rejectedError{st}
	}
	return st.AsError()
}

type rejectedError struct{ st *framework.Status }

func (e *rejectedError) Error() string { return e.st.Message() }

// bind is the binding cycle: the wait at Permit (if a plugin asked for one), PreBind,
// Bind, PostBind. A failure undoes the assumption and sends the pod back to the queue.
func (s *Scheduler) bind(ctx context.Context, fwk *runtime.Framework, state *framework.CycleState, qp *queue.QueuedPodInfo, assumed *v1.Pod, host string, start time.Time) {
	fail := func(st *framework.Status) {
		fwk.RunReservePluginsUnreserve(ctx, state, assumed, host)
		if err := s.cache.ForgetPod(assumed); err != nil {
			s.log.Error("cache: forget pod", "pod", qp.Key(), "err", err)
		}
		// The room the pod held is free again.
		s.queue.MoveAllToActiveOrBackoff(nil)
		s.handleFailure(ctx, fwk, state, qp, fmt.Errorf("binding rejected: %w", statusError(st)), 0, start)
	}
	if st := fwk.WaitOnPermit(ctx, assumed); !st.IsSuccess() {
		fail(st)
		return
	}
	if st := fwk.RunPreBindPlugins(ctx, state, assumed, host); !st.IsSuccess() {
		fail(st)
		return
	}
	if st := fwk.RunBindPlugins(ctx, state, assumed, host); !st.IsSuccess() {
		fail(st)
		return
	}
	s.cache.FinishBinding(assumed)
	s.queue.Done(assumed.UID)
	s.metrics.attempts.WithLabelValues(resultScheduled, fwk.ProfileName()).Inc()
	s.metrics.attemptDuration.WithLabelValues(resultScheduled, fwk.ProfileName()).Observe(time.Since(start).Seconds())
	s.metrics.podAttempts.Observe(float64(qp.Attempts))
	s.metrics.podSLI.WithLabelValues(fmt.Sprint(min(qp.Attempts, 16))).Observe(time.Since(qp.Created).Seconds())
	s.recorder.Eventf(qp.Pod, v1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", assumed.Namespace, assumed.Name, host)
	fwk.RunPostBindPlugins(ctx, state, assumed, host)
}

// handleFailure requeues a pod that could not be scheduled (unschedulable pods wait in
// the pool for a helpful event, errors back off), runs PostFilter (preemption) for
// unschedulable pods, and records the FailedScheduling event, the PodScheduled
// condition and the explanation.
func (s *Scheduler) handleFailure(ctx context.Context, fwk *runtime.Framework, state *framework.CycleState, qp *queue.QueuedPodInfo, err error, evaluated int, start time.Time) {
	if ctx.Err() != nil {
		// The term ended (leadership lost, or stopping) during the attempt: that is no
		// verdict on the pod. It goes back to the queue for the next term, without an
		// event, a status write or a metric.
		s.queue.AddUnschedulable(qp, false)
		return
	}
	pod := qp.Pod
	result, reason := resultError, v1.PodReasonSchedulerError
	unschedulable := false
	nominated := ""
	var explanation *runtime.Explanation
	var postFilter *explorerv1.PostFilterResult
	var fe *runtime.FitError
	var rej *rejectedError
	switch {
	case errors.As(err, &fe):
		result, reason, unschedulable = resultUnschedulable, v1.PodReasonUnschedulable, true
		qp.UnschedulablePlugins = fe.Diagnosis.UnschedulablePlugins
		if fwk.HasPostFilter() {
			s.metrics.preemptions.Inc()
			r, st := fwk.RunPostFilterPlugins(ctx, state, pod, fe.Diagnosis.NodeToStatus)
			if st.Code() == framework.Error {
				s.log.Error("PostFilter failed", "pod", qp.Key(), "err", st.AsError())
			} else if st.IsSuccess() || st.IsRejected() {
				fe.Diagnosis.PostFilterMsg = st.Message()
			}
			if r != nil && r.NominatedNodeName != "" {
				nominated = r.NominatedNodeName
			}
			postFilter = postFilterResult(nominated, st.Code().String(), st.Message())
		}
		explanation = fwk.ExplainFailure(state, fe, evaluated)
	case errors.Is(err, runtime.ErrNoNodes):
		// Upstream's message as is: "no nodes available to schedule pods".
		result, reason, unschedulable = resultUnschedulable, v1.PodReasonUnschedulable, true
	case errors.As(err, &rej):
		result, reason, unschedulable = resultUnschedulable, v1.PodReasonUnschedulable, true
		// The plugin that rejected at Reserve or Permit decides, through its queueing
		// hints, which events bring the pod back.
		if p := rej.st.Plugin(); p != "" {
			qp.UnschedulablePlugins = map[string]struct{}{p: {}}
		}
	}
	msg := err.Error()
	if unschedulable {
		s.log.Debug("unschedulable", "pod", qp.Key(), "reason", msg)
	} else {
		s.log.Error("scheduling failed", "pod", qp.Key(), "err", err)
	}
	s.metrics.attempts.WithLabelValues(result, fwk.ProfileName()).Inc()
	s.metrics.attemptDuration.WithLabelValues(result, fwk.ProfileName()).Observe(time.Since(start).Seconds())
	recResult := explorerv1.ResultUnschedulable
	if !unschedulable {
		recResult = explorerv1.ResultError
	}
	s.recordAttempt(qp, fwk.ProfileName(), explanation, recResult, "", msg, postFilter, start)
	if nominated != "" {
		s.queue.AddNominated(pod, nominated)
	}
	s.queue.AddUnschedulable(qp, unschedulable)
	// The explanation of an unschedulable pod rides on its FailedScheduling Event (an
	// annotation of the Event): a write of the pod would be judged by users' policies on
	// pods, which must not refuse the scheduler's own records.
	if b, err := explanationJSON(explanation); err == nil && b != "" {
		s.recorder.AnnotatedEventf(pod, map[string]string{ExplainAnnotation: b}, v1.EventTypeWarning, "FailedScheduling", "%s", msg)
	} else {
		s.recorder.Event(pod, v1.EventTypeWarning, "FailedScheduling", msg)
	}
	// The API writes happen off the scheduling loop, as upstream does, so that many
	// unschedulable pods do not slow the pods that fit.
	s.bindWG.Add(1)
	go func() {
		defer s.bindWG.Done()
		s.updateStatus(ctx, pod, reason, msg, nominated)
	}()
}

func explanationJSON(e *runtime.Explanation) (string, error) {
	if e == nil {
		return "", nil
	}
	b, err := json.Marshal(e)
	return string(b), err
}

// updateStatus sets PodScheduled=False (and nominatedNodeName) unless the pod already
// says exactly that. Failures are logged: the pod is retried anyway.
func (s *Scheduler) updateStatus(ctx context.Context, pod *v1.Pod, reason, msg, nominated string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == reason && c.Message == msg &&
			(nominated == "" || pod.Status.NominatedNodeName == nominated) {
			return
		}
	}
	cond := map[string]any{"type": v1.PodScheduled, "status": v1.ConditionFalse, "reason": reason, "message": msg,
		"lastProbeTime": nil, "lastTransitionTime": metav1.Now()}
	status := map[string]any{"conditions": []any{cond}}
	if nominated != "" {
		status["nominatedNodeName"] = nominated
	}
	patch, _ := json.Marshal(map[string]any{"status": status})
	pods := s.client.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		s.log.Warn("update pod status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}
