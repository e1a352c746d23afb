package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Upstream's pkg/apis/apps/v1 and pkg/apis/batch/v1 defaults for StatefulSets,
// DaemonSets, Jobs and CronJobs.

func i32(v int32) *int32 { return &v }

func statefulSet(ss *appsv1.StatefulSet) {
	s := &ss.Spec
	if s.Replicas == nil {
		s.Replicas = i32(1)
	}
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		if s.UpdateStrategy.RollingUpdate.Partition == nil {
			s.UpdateStrategy.RollingUpdate.Partition = i32(0)
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = i32(10)
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenDeleted == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenScaled == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	for i := range s.VolumeClaimTemplates {
		if s.VolumeClaimTemplates[i].Spec.VolumeMode == nil {
			m := corev1.PersistentVolumeFilesystem
			s.VolumeClaimTemplates[i].Spec.VolumeMode = &m
		}
	}
	podTemplateSpec(&s.Template)
}

func daemonSet(ds *appsv1.DaemonSet) {
	s := &ds.Spec
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.UpdateStrategy.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromInt32(1)
			s.UpdateStrategy.RollingUpdate.MaxUnavailable = &v
		}
		if s.UpdateStrategy.RollingUpdate.MaxSurge == nil {
			v := intstr.FromInt32(0)
			s.UpdateStrategy.RollingUpdate.MaxSurge = &v
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = i32(10)
	}
	podTemplateSpec(&s.Template)
}

// Labels a Job's pods carry so that its generated selector finds them (upstream's
// batch.kubernetes.io/* names and the legacy ones, both set).
const (
	JobControllerUIDLabel       = "batch.kubernetes.io/controller-uid"
	JobNameLabel                = "batch.kubernetes.io/job-name"
	legacyJobControllerUIDLabel = "controller-uid"
	legacyJobNameLabel          = "job-name"
)

func job(j *batchv1.Job) {
	s := &j.Spec
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions, s.Parallelism = i32(1), i32(1)
	}
	if s.Parallelism == nil {
		s.Parallelism = i32(1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = i32(1<<31 - 1)
		} else {
			s.BackoffLimit = i32(6)
		}
	}
	if len(j.Labels) == 0 && len(s.Template.Labels) > 0 {
		j.Labels = map[string]string{}
		for k, v := range s.Template.Labels {
			j.Labels[k] = v
		}
	}
	if s.CompletionMode == nil {
		m := batchv1.NonIndexedCompletion
		s.CompletionMode = &m
	}
	if s.Suspend == nil {
		f := false
		s.Suspend = &f
	}
	if s.PodFailurePolicy != nil {
		for _, r := range s.PodFailurePolicy.Rules {
			for i := range r.OnPodConditions {
				if r.OnPodConditions[i].Status == "" {
					r.OnPodConditions[i].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if s.PodReplacementPolicy == nil {
		p := batchv1.TerminatingOrFailed
		if s.PodFailurePolicy != nil {
			p = batchv1.Failed
		}
		s.PodReplacementPolicy = &p
	}
	if s.ManualSelector == nil || !*s.ManualSelector {
		generateJobSelector(j)
	}
	podTemplateSpec(&s.Template)
}

// generateJobSelector is what upstream's Job strategy does on create: the pods get the
// job's name and uid as labels and the selector picks the uid, so that no other Job's pods
// match. It needs the uid, so it waits until the server has assigned one; it is idempotent.
func generateJobSelector(j *batchv1.Job) {
	if j.UID == "" {
		return
	}
	t := &j.Spec.Template
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	for _, k := range []string{legacyJobNameLabel, JobNameLabel} {
		if _, ok := t.Labels[k]; !ok {
			t.Labels[k] = j.Name
		}
	}
	for _, k := range []string{legacyJobControllerUIDLabel, JobControllerUIDLabel} {
		if _, ok := t.Labels[k]; !ok {
			t.Labels[k] = string(j.UID)
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[JobControllerUIDLabel]; !ok {
		j.Spec.Selector.MatchLabels[JobControllerUIDLabel] = string(j.UID)
	}
}

func cronJob(cj *batchv1.CronJob) {
	s := &cj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		f := false
		s.Suspend = &f
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = i32(3)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = i32(1)
	}
	podTemplateSpec(&s.JobTemplate.Spec.Template)
}
