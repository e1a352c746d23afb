package podautoscaler

import (
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Tolerance is how far the usage ratio may be from 1 before the replica count changes
// (upstream's --horizontal-pod-autoscaler-tolerance).
const Tolerance = 0.1

// PodUsage is one pod's measured usage of a resource, in milli-units (millicores, or
// milli-bytes for memory, as upstream's MetricsClient reports).
type PodUsage map[string]int64

// podInfo is what the calculator needs of a pod.
type podInfo struct {
	name    string
	ready   bool
	request int64 // the sum of its containers' requests of the resource, milli-units; 0: none
}

// classify sorts the pods the selector matched: pods that count, pods not yet ready
// (ignored when scaling up), and pods without a metric. Deleted and failed pods are gone.
func classify(pods []*corev1.Pod, res corev1.ResourceName, needRequests bool) ([]podInfo, error) {
	var out []podInfo
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		var req int64
		for _, c := range p.Spec.Containers {
			q, ok := c.Resources.Requests[res]
			if !ok && needRequests {
				return nil, fmt.Errorf("missing request for %s in container %s of pod %s/%s", res, c.Name, p.Namespace, p.Name)
			}
			req += q.MilliValue()
		}
		ready := p.Status.Phase == corev1.PodRunning
		if ready {
			ready = false
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = true
				}
			}
		}
		out = append(out, podInfo{name: p.Name, ready: ready, request: req})
	}
	return out, nil
}

// Recommendation is what one metric asks for.
type Recommendation struct {
	Replicas int32
	// Utilization is the average usage as a percentage of the pods' requests (Utilization
	// targets), and Average the average usage per pod in milli-units.
	Utilization  *int32
	AverageMilli int64
}

// ResourceReplicas is upstream's replica calculator for a Resource metric: the usage ratio of
// the pods that are ready and have a metric, against the target; within Tolerance of 1 the
// count stays; otherwise pods without a metric count as using their whole request when
// scaling down (nothing when scaling up), and pods not yet ready as using nothing when
// scaling up, and if that flips the direction or lands within the tolerance the count
// stays. The new count is the ratio times the number of pods with a metric, rounded up.
// current is the target's current replica count.
func ResourceReplicas(current int32, pods []*corev1.Pod, usage PodUsage, res corev1.ResourceName, target autoscalingv2.MetricTarget) (Recommendation, error) {
	// AverageValue targets need no requests.
	infos, err := classify(pods, res, target.Type == autoscalingv2.UtilizationMetricType)
	if err != nil {
		return Recommendation{}, err
	}
	if len(infos) == 0 {
		return Recommendation{}, fmt.Errorf("no pods match the target's selector")
	}
	var sumUsage, sumReq int64
	var counted int
	var missing, unready []podInfo
	for _, p := range infos {
		u, ok := usage[p.name]
		switch {
		case !ok:
			missing = append(missing, p)
		case !p.ready:
			unready = append(unready, p)
		default:
			sumUsage += u
			sumReq += p.request
			counted++
		}
	}
	if counted == 0 {
		return Recommendation{}, fmt.Errorf("did not receive metrics for any ready pods")
	}
	ratio := func(u, r int64, n int) float64 {
		if target.Type == autoscalingv2.UtilizationMetricType {
			return (float64(u) * 100 / float64(r)) / float64(*target.AverageUtilization)
		}
		return float64(u) / float64(n) / float64(target.AverageValue.MilliValue())
	}
	rec := Recommendation{AverageMilli: sumUsage / int64(counted)}
	if target.Type == autoscalingv2.UtilizationMetricType {
		if target.AverageUtilization == nil || *target.AverageUtilization <= 0 {
			return Recommendation{}, fmt.Errorf("target averageUtilization must be above 0")
		}
		if sumReq == 0 {
			return Recommendation{}, fmt.Errorf("the pods request no %s", res)
		}
		util := int32(sumUsage * 100 / sumReq)
		rec.Utilization = &util
	} else if target.AverageValue == nil || target.AverageValue.MilliValue() <= 0 {
		return Recommendation{}, fmt.Errorf("target averageValue must be above 0")
	}
	r := ratio(sumUsage, sumReq, counted)
	if len(missing) == 0 && len(unready) == 0 {
		if math.Abs(1-r) <= Tolerance {
			rec.Replicas = current
			return rec, nil
		}
		rec.Replicas = int32(math.Ceil(r * float64(counted)))
		return rec, nil
	}
	// Fill in what the missing and unready pods are assumed to use.
	n := counted
	if r < 1 {
		for _, p := range missing {
			sumUsage += p.request
			if target.Type != autoscalingv2.UtilizationMetricType {
				sumUsage += target.AverageValue.MilliValue()
			}
			sumReq += p.request
			n++
		}
	} else if r > 1 {
		for _, p := range append(missing, unready...) {
			sumReq += p.request
			n++
		}
	}
	nr := ratio(sumUsage, sumReq, n)
	if math.Abs(1-nr) <= Tolerance || (r < 1) != (nr < 1) {
		rec.Replicas = current
		return rec, nil
	}
	rec.Replicas = int32(math.Ceil(nr * float64(n)))
	return rec, nil
}

// timestamped is a past recommendation (replicas: the count) or scale change (replicas:
// the signed change).
type timestamped struct {
	at       time.Time
	replicas int32
}

// Stabilize is upstream's stabilization window: the count kept is the highest
// recommendation of the last downWindow when scaling down (so a short dip does not drop
// pods) and the lowest of the last upWindow when scaling up. recs are the earlier
// recommendations (any age); desired is this one.
func Stabilize(recs []timestamped, desired, current int32, now time.Time, upWindow, downWindow time.Duration) int32 {
	up, down := desired, desired
	for _, r := range recs {
		if now.Sub(r.at) <= upWindow {
			up = min(up, r.replicas)
		}
		if now.Sub(r.at) <= downWindow {
			down = max(down, r.replicas)
		}
	}
	switch {
	case desired > current:
		return max(current, up)
	case desired < current:
		return min(current, down)
	}
	return current
}

// Bounds clamps desired to [min, max] and to what the scaling policies allow within their
// periods, given the changes of the recent past (events). It reports the condition reason
// when a bound applied ("" when none did).
func Bounds(desired, current, minR, maxR int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior, events []timestamped, now time.Time) (int32, string) {
	reason := ""
	if desired > current {
		if lim := policyLimit(b.ScaleUp, current, events, now, true); desired > lim {
			desired, reason = lim, "ScaleUpLimit"
		}
	} else if desired < current {
		if lim := policyLimit(b.ScaleDown, current, events, now, false); desired < lim {
			desired, reason = lim, "ScaleDownLimit"
		}
	}
	if desired > maxR {
		return maxR, "TooManyReplicas"
	}
	if desired < minR {
		return minR, "TooFewReplicas"
	}
	return desired, reason
}

// policyLimit is the farthest the count may move from current under rules: for each
// policy, the replicas at the start of its period (current less the changes within it) plus
// (up) or less (down) its Pods or Percent; Max selects the most permissive, Min the least,
// Disabled none.
func policyLimit(rules *autoscalingv2.HPAScalingRules, current int32, events []timestamped, now time.Time, up bool) int32 {
	if rules == nil || (rules.SelectPolicy != nil && *rules.SelectPolicy == autoscalingv2.DisabledPolicySelect) {
		return current
	}
	sel := autoscalingv2.MaxChangePolicySelect
	if rules.SelectPolicy != nil {
		sel = *rules.SelectPolicy
	}
	var best int32
	first := true
	for _, p := range rules.Policies {
		period := time.Duration(p.PeriodSeconds) * time.Second
		var changed int32 // replicas added (up) or removed (down) within the period
		for _, e := range events {
			if now.Sub(e.at) <= period && (e.replicas > 0) == up {
				if up {
					changed += e.replicas
				} else {
					changed -= e.replicas
				}
			}
		}
		var lim int32
		if up {
			start := current - changed
			switch p.Type {
			case autoscalingv2.PodsScalingPolicy:
				lim = start + p.Value
			case autoscalingv2.PercentScalingPolicy:
				lim = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
			}
		} else {
			start := current + changed
			switch p.Type {
			case autoscalingv2.PodsScalingPolicy:
				lim = start - p.Value
			case autoscalingv2.PercentScalingPolicy:
				lim = int32(math.Ceil(float64(start) * (1 - float64(p.Value)/100)))
			}
		}
		switch {
		case first:
			best = lim
		case (sel == autoscalingv2.MaxChangePolicySelect) == up:
			best = max(best, lim)
		default:
			best = min(best, lim)
		}
		first = false
	}
	if first {
		return current
	}
	if up {
		return max(best, current)
	}
	return min(max(best, 0), current)
}
