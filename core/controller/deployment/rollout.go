package deployment

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Annotations the controller keeps on Deployments and ReplicaSets, as upstream (kubectl
// rollout history and undo read them).
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	// PodTemplateHashLabel names the template a ReplicaSet (and its pods) were made from.
	PodTemplateHashLabel = appsv1.DefaultDeploymentUniqueLabelKey
)

// ComputeHash is the pod-template-hash of template: a stable hash of its JSON form, salted
// with collisionCount so that a name clash is resolved by bumping the count.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	b, _ := json.Marshal(template)
	h.Write(b)
	if collisionCount != nil {
		fmt.Fprintf(h, "/%d", *collisionCount)
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// EqualIgnoreHash reports whether two pod templates are the same apart from the
// pod-template-hash label.
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, PodTemplateHashLabel)
	delete(b.Labels, PodTemplateHashLabel)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return equality.Semantic.DeepEqual(a, b)
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func desired(d *appsv1.Deployment) int32 { return replicas(d.Spec.Replicas) }

// isRolling reports whether d uses the RollingUpdate strategy (the default).
func isRolling(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType
}

// ResolveFenceposts turns maxSurge and maxUnavailable (absolute or percent of desired) into
// numbers: surge rounds up, unavailable rounds down, and both zero means one unavailable, so
// that a rollout can always make progress.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (int32, int32, error) {
	def := intstr.FromString("25%")
	if maxSurge == nil {
		maxSurge = &def
	}
	if maxUnavailable == nil {
		maxUnavailable = &def
	}
	surge, err := intstr.GetScaledValueFromIntOrPercent(maxSurge, int(desired), true)
	if err != nil {
		return 0, 0, fmt.Errorf("spec.strategy.rollingUpdate.maxSurge: %w", err)
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, int(desired), false)
	if err != nil {
		return 0, 0, fmt.Errorf("spec.strategy.rollingUpdate.maxUnavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return int32(surge), int32(unavailable), nil
}

func rollingParams(d *appsv1.Deployment) (*intstr.IntOrString, *intstr.IntOrString) {
	if d.Spec.Strategy.RollingUpdate == nil {
		return nil, nil
	}
	return d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable
}

// MaxSurge is how many pods above desired a rolling update may run (0 for Recreate).
func MaxSurge(d *appsv1.Deployment) int32 {
	if !isRolling(d) {
		return 0
	}
	s, u := rollingParams(d)
	surge, _, _ := ResolveFenceposts(s, u, desired(d))
	return surge
}

// MaxUnavailable is how many pods below desired a rolling update may fall (0 for Recreate),
// never more than desired.
func MaxUnavailable(d *appsv1.Deployment) int32 {
	if !isRolling(d) || desired(d) == 0 {
		return 0
	}
	s, u := rollingParams(d)
	_, unavailable, _ := ResolveFenceposts(s, u, desired(d))
	return min(unavailable, desired(d))
}

// podCount is the number of pods rss may have running: the larger of spec.replicas and
// status.replicas for each, so that pods of a ReplicaSet that was just scaled down but whose
// pods are not yet deleted still count against the surge.
func podCount(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += max(replicas(rs.Spec.Replicas), rs.Status.Replicas)
		}
	}
	return n
}

func specCount(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += replicas(rs.Spec.Replicas)
		}
	}
	return n
}

func availableCount(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.AvailableReplicas
		}
	}
	return n
}

// NewRSNewReplicas is the size the new ReplicaSet may grow to now: all of desired for
// Recreate; for RollingUpdate as much as keeps every pod of every ReplicaSet within
// desired+maxSurge.
func NewRSNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if !isRolling(d) {
		return desired(d)
	}
	cur := replicas(newRS.Spec.Replicas)
	maxTotal := desired(d) + MaxSurge(d)
	current := podCount(all)
	if current >= maxTotal {
		return cur
	}
	up := min(maxTotal-current, max(desired(d)-cur, 0))
	return cur + up
}

// OldScaleDownBudget is how many old pods a rolling update may remove now without going
// below desired-maxUnavailable available pods, counting the new ReplicaSet's unavailable
// pods as already missing.
func OldScaleDownBudget(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	minAvailable := desired(d) - MaxUnavailable(d)
	newUnavailable := replicas(newRS.Spec.Replicas) - newRS.Status.AvailableReplicas
	return specCount(all) - minAvailable - newUnavailable
}

// byCreation sorts ReplicaSets oldest first.
func byCreation(rss []*appsv1.ReplicaSet) {
	sort.SliceStable(rss, func(i, j int) bool {
		a, b := rss[i], rss[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// Revision is the revision annotation of obj's annotations, 0 if absent or malformed.
func Revision(annotations map[string]string) int64 {
	v, err := strconv.ParseInt(annotations[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// maxRevision is the highest revision among rss.
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, Revision(rs.Annotations))
	}
	return m
}

// skipCopy are annotations a Deployment does not pass to its ReplicaSets.
var skipCopy = map[string]bool{
	RevisionAnnotation: true, DesiredReplicasAnnotation: true, MaxReplicasAnnotation: true,
	"deployment.kubernetes.io/revision-history":        true,
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// syncRSAnnotations copies d's annotations onto rs and raises rs's revision to revision;
// it reports whether rs changed.
func syncRSAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, revision int64) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if skipCopy[k] || rs.Annotations[k] == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	if Revision(rs.Annotations) < revision {
		rs.Annotations[RevisionAnnotation] = strconv.FormatInt(revision, 10)
		changed = true
	}
	return changed
}

// setReplicasAnnotations records the desired and maximum sizes a ReplicaSet was scaled
// for; proportional scaling reads them back.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(maxReplicas))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation] = d
	rs.Annotations[MaxReplicasAnnotation] = m
	return true
}

func intAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, err := strconv.ParseInt(rs.Annotations[key], 10, 32)
	return int32(v), err == nil
}

func activeRSs(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && replicas(rs.Spec.Replicas) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// Proportional returns the new size of each active ReplicaSet when a rolling Deployment is
// resized in the middle of a rollout: the change is shared in proportion to each
// ReplicaSet's size (as recorded by its max-replicas annotation), and the rounding leftover
// goes to the largest (newest on ties when growing, oldest when shrinking), as upstream.
func Proportional(d *appsv1.Deployment, active []*appsv1.ReplicaSet) map[string]int32 {
	out := map[string]int32{}
	if len(active) == 0 {
		return out
	}
	allowed := desired(d)
	if allowed > 0 {
		allowed += MaxSurge(d)
	}
	toAdd := allowed - specCount(active)
	sorted := append([]*appsv1.ReplicaSet(nil), active...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if replicas(a.Spec.Replicas) != replicas(b.Spec.Replicas) {
			return replicas(a.Spec.Replicas) > replicas(b.Spec.Replicas)
		}
		if toAdd > 0 {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
	var added int32
	for _, rs := range sorted {
		size := replicas(rs.Spec.Replicas)
		if toAdd != 0 && added != toAdd && size > 0 {
			frac := fraction(rs, d, allowed)
			left := toAdd - added
			var p int32
			if toAdd > 0 {
				p = min(frac, left)
			} else {
				p = max(frac, left)
			}
			size += p
			added += p
		}
		out[rs.Name] = size
	}
	if toAdd != 0 && added != toAdd {
		first := sorted[0].Name
		out[first] = max(out[first]+toAdd-added, 0)
	}
	return out
}

func fraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment, allowed int32) int32 {
	size := replicas(rs.Spec.Replicas)
	if desired(d) == 0 {
		return -size
	}
	annotated, ok := intAnnotation(rs, MaxReplicasAnnotation)
	if !ok || annotated == 0 {
		annotated = d.Status.Replicas
	}
	if annotated == 0 {
		return 0
	}
	n := float64(size) * float64(allowed) / float64(annotated)
	return int32(math.Round(n)) - size
}
