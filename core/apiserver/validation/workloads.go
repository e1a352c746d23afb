package validation

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's rules for StatefulSets, DaemonSets, ControllerRevisions, Jobs and CronJobs
// (pkg/apis/apps/validation, pkg/apis/batch/validation), with their messages.

func nonNegative(v *int32, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return apimachineryvalidation.ValidateNonnegativeField(int64(*v), p)
}

// ---- StatefulSet ----

func validateStatefulSet(ss *appsv1.StatefulSet) field.ErrorList {
	allErrs := objectMeta(&ss.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel)
	return append(allErrs, validateStatefulSetSpec(&ss.Spec, field.NewPath("spec"))...)
}

func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch spec.PodManagementPolicy {
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("podManagementPolicy"), ""))
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	usPath := fldPath.Child("updateStrategy")
	switch spec.UpdateStrategy.Type {
	case appsv1.OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			allErrs = append(allErrs, field.Invalid(usPath.Child("rollingUpdate"), spec.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
			allErrs = append(allErrs, nonNegative(ru.Partition, usPath.Child("rollingUpdate", "partition"))...)
			if ru.MaxUnavailable != nil {
				allErrs = append(allErrs, validatePositiveIntOrPercent(*ru.MaxUnavailable, usPath.Child("rollingUpdate", "maxUnavailable"))...)
				if intOrPercentValue(*ru.MaxUnavailable) == 0 {
					allErrs = append(allErrs, field.Invalid(usPath.Child("rollingUpdate", "maxUnavailable"), ru.MaxUnavailable.String(), "must be greater than 0"))
				}
			}
		}
	case "":
		allErrs = append(allErrs, field.Required(usPath, ""))
	default:
		allErrs = append(allErrs, field.Invalid(usPath, spec.UpdateStrategy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}
	if spec.Replicas != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(*spec.Replicas), fldPath.Child("replicas"))...)
	}
	if spec.Ordinals != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(spec.Ordinals.Start), fldPath.Child("ordinals", "start"))...)
	}
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, nonNegative(spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
	if spec.ServiceName != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSLabel(spec.ServiceName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("serviceName"), spec.ServiceName, msg))
		}
	}
	for i, pvc := range spec.VolumeClaimTemplates {
		p := fldPath.Child("volumeClaimTemplates").Index(i)
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(pvc.Name, false) {
			allErrs = append(allErrs, field.Invalid(p.Child("metadata", "name"), pvc.Name, msg))
		}
		allErrs = append(allErrs, validatePVCSpec(&pvc.Spec, p.Child("spec"))...) // volumes.go
	}
	// The pods mount the claims of volumeClaimTemplates as volumes of those names (the
	// controller adds them), so the template is checked with them (volumes.go).
	allErrs = append(allErrs, validateWorkloadSelector(spec.Selector, withClaimVolumes(spec), "statefulset", fldPath)...)
	return allErrs
}

func validateStatefulSetUpdate(ss, old *appsv1.StatefulSet) field.ErrorList {
	allErrs := metaUpdate(&ss.ObjectMeta, &old.ObjectMeta)
	// Only these fields may change, as upstream; everything else of the spec is fixed at
	// creation (the service name, the selector, the volume claim templates, ...).
	a, b := ss.Spec.DeepCopy(), old.Spec.DeepCopy()
	for _, s := range []*appsv1.StatefulSetSpec{a, b} {
		s.Replicas, s.Ordinals, s.Template, s.UpdateStrategy = nil, nil, corev1.PodTemplateSpec{}, appsv1.StatefulSetUpdateStrategy{}
		s.RevisionHistoryLimit, s.PersistentVolumeClaimRetentionPolicy, s.MinReadySeconds = nil, nil, 0
	}
	if !apiequality.Semantic.DeepEqual(a, b) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
	}
	return append(allErrs, validateStatefulSetSpec(&ss.Spec, field.NewPath("spec"))...)
}

// ---- DaemonSet ----

func validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	allErrs := objectMeta(&ds.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
}

func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateWorkloadSelector(spec.Selector, &spec.Template, "daemonset", fldPath)...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, nonNegative(spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
	usPath := fldPath.Child("updateStrategy")
	switch spec.UpdateStrategy.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		ru := spec.UpdateStrategy.RollingUpdate
		if ru == nil {
			allErrs = append(allErrs, field.Required(usPath.Child("rollingUpdate"), "this should be defaulted and never be nil"))
			break
		}
		zero := intstr.FromInt32(0)
		mu, ms := &zero, &zero
		if ru.MaxUnavailable != nil {
			mu = ru.MaxUnavailable
		}
		if ru.MaxSurge != nil {
			ms = ru.MaxSurge
		}
		rp := usPath.Child("rollingUpdate")
		allErrs = append(allErrs, validatePositiveIntOrPercent(*mu, rp.Child("maxUnavailable"))...)
		allErrs = append(allErrs, validatePositiveIntOrPercent(*ms, rp.Child("maxSurge"))...)
		muv, msv := intOrPercentValue(*mu), intOrPercentValue(*ms)
		switch {
		case muv == 0 && msv == 0:
			allErrs = append(allErrs, field.Invalid(rp.Child("maxUnavailable"), mu.String(), "may not be 0 when `maxSurge` is 0"))
		case muv != 0 && msv != 0:
			allErrs = append(allErrs, field.Invalid(rp.Child("maxSurge"), ms.String(), "may not be set when maxUnavailable is non-zero"))
		}
		for _, v := range []struct {
			v *intstr.IntOrString
			n string
		}{{mu, "maxUnavailable"}, {ms, "maxSurge"}} {
			if n, isPercent := percentValue(*v.v); isPercent && n > 100 {
				allErrs = append(allErrs, field.Invalid(rp.Child(v.n), v.v.String(), "must not be greater than 100%"))
			}
		}
	default:
		allErrs = append(allErrs, field.NotSupported(usPath.Child("type"), spec.UpdateStrategy.Type,
			[]string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)}))
	}
	return allErrs
}

func validateDaemonSetUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	allErrs := metaUpdate(&ds.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
	return append(allErrs, apimachineryvalidation.ValidateImmutableField(ds.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ---- ControllerRevision ----

func validateControllerRevision(cr *appsv1.ControllerRevision) field.ErrorList {
	allErrs := objectMeta(&cr.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	if cr.Data.Raw == nil && cr.Data.Object == nil {
		allErrs = append(allErrs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(allErrs, apimachineryvalidation.ValidateNonnegativeField(cr.Revision, field.NewPath("revision"))...)
}

func validateControllerRevisionUpdate(cr, old *appsv1.ControllerRevision) field.ErrorList {
	allErrs := metaUpdate(&cr.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateControllerRevision(cr)...)
	return append(allErrs, apimachineryvalidation.ValidateImmutableField(cr.Data, old.Data, field.NewPath("data"))...)
}

// ---- Job ----

func validateJob(job *batchv1.Job) field.ErrorList {
	allErrs := objectMeta(&job.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateJobSpec(&job.Spec, field.NewPath("spec"), true)...)
}

// validateJobSpec checks a Job's spec; a CronJob's job template has no selector yet
// (the Job gets one when it is created), so requireSelector is false there.
func validateJobSpec(spec *batchv1.JobSpec, fldPath *field.Path, requireSelector bool) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, nonNegative(spec.Parallelism, fldPath.Child("parallelism"))...)
	allErrs = append(allErrs, nonNegative(spec.Completions, fldPath.Child("completions"))...)
	allErrs = append(allErrs, nonNegative(spec.BackoffLimit, fldPath.Child("backoffLimit"))...)
	allErrs = append(allErrs, nonNegative(spec.TTLSecondsAfterFinished, fldPath.Child("ttlSecondsAfterFinished"))...)
	if spec.ActiveDeadlineSeconds != nil && *spec.ActiveDeadlineSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *spec.ActiveDeadlineSeconds, "must be greater than 0"))
	}
	switch mode := spec.CompletionMode; {
	case mode == nil || *mode == batchv1.NonIndexedCompletion:
		if spec.BackoffLimitPerIndex != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
	case *mode == batchv1.IndexedCompletion:
		if spec.Completions == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > 100000 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism, "must be less than or equal to 100000 when completion mode is Indexed"))
		}
		allErrs = append(allErrs, nonNegative(spec.BackoffLimitPerIndex, fldPath.Child("backoffLimitPerIndex"))...)
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("completionMode"), *mode,
			[]string{string(batchv1.NonIndexedCompletion), string(batchv1.IndexedCompletion)}))
	}
	if spec.PodFailurePolicy != nil {
		allErrs = append(allErrs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	tPath := fldPath.Child("template")
	if requireSelector || spec.Selector != nil {
		selPath := fldPath.Child("selector")
		if spec.Selector == nil {
			allErrs = append(allErrs, field.Required(selPath, ""))
		} else {
			allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
			if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
				allErrs = append(allErrs, field.Invalid(tPath.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
			}
		}
	}
	allErrs = append(allErrs, validatePodTemplateSpec(&spec.Template, tPath)...)
	switch spec.Template.Spec.RestartPolicy {
	case corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		allErrs = append(allErrs, field.NotSupported(tPath.Child("spec", "restartPolicy"), spec.Template.Spec.RestartPolicy,
			[]string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	}
	return allErrs
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		allErrs = append(allErrs, field.Invalid(fldPath.Root().Child("spec", "template", "spec", "restartPolicy"), spec.Template.Spec.RestartPolicy,
			"only \"Never\" is supported when podFailurePolicy is specified"))
	}
	actions := []string{string(batchv1.PodFailurePolicyActionFailJob), string(batchv1.PodFailurePolicyActionFailIndex),
		string(batchv1.PodFailurePolicyActionCount), string(batchv1.PodFailurePolicyActionIgnore)}
	for i, r := range spec.PodFailurePolicy.Rules {
		rp := fldPath.Child("rules").Index(i)
		switch r.Action {
		case batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionIgnore:
		case batchv1.PodFailurePolicyActionFailIndex:
			if spec.BackoffLimitPerIndex == nil {
				allErrs = append(allErrs, field.Invalid(rp.Child("action"), r.Action, "requires the backoffLimitPerIndex to be set"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(rp.Child("action"), r.Action, actions))
		}
		switch {
		case r.OnExitCodes != nil && len(r.OnPodConditions) > 0:
			allErrs = append(allErrs, field.Invalid(rp, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
		case r.OnExitCodes == nil && len(r.OnPodConditions) == 0:
			allErrs = append(allErrs, field.Invalid(rp, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
		}
		if ec := r.OnExitCodes; ec != nil {
			ep := rp.Child("onExitCodes")
			switch ec.Operator {
			case batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn:
			default:
				allErrs = append(allErrs, field.NotSupported(ep.Child("operator"), ec.Operator,
					[]string{string(batchv1.PodFailurePolicyOnExitCodesOpIn), string(batchv1.PodFailurePolicyOnExitCodesOpNotIn)}))
			}
			if len(ec.Values) == 0 {
				allErrs = append(allErrs, field.Invalid(ep.Child("values"), ec.Values, "at least one value is required"))
			}
			for j, v := range ec.Values {
				if v == 0 && ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
					allErrs = append(allErrs, field.Invalid(ep.Child("values").Index(j), v, "must not be 0 for the In operator"))
				}
				if j > 0 && ec.Values[j-1] >= v {
					allErrs = append(allErrs, field.Invalid(ep.Child("values").Index(j), v, "must be ordered"))
				}
			}
		}
	}
	return allErrs
}

func validateJobUpdate(job, old *batchv1.Job) field.ErrorList {
	allErrs := metaUpdate(&job.ObjectMeta, &old.ObjectMeta)
	fldPath := field.NewPath("spec")
	allErrs = append(allErrs, validateJobSpec(&job.Spec, fldPath, true)...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(job.Spec.Selector, old.Spec.Selector, fldPath.Child("selector"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(job.Spec.CompletionMode, old.Spec.CompletionMode, fldPath.Child("completionMode"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(job.Spec.PodFailurePolicy, old.Spec.PodFailurePolicy, fldPath.Child("podFailurePolicy"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(job.Spec.BackoffLimitPerIndex, old.Spec.BackoffLimitPerIndex, fldPath.Child("backoffLimitPerIndex"))...)
	// Indexed Jobs may change completions together with parallelism (elastic indexed jobs).
	indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
	if !indexed || !apiequality.Semantic.DeepEqual(job.Spec.Completions, job.Spec.Parallelism) {
		allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(job.Spec.Completions, old.Spec.Completions, fldPath.Child("completions"))...)
	}
	// The pod template is fixed, except that the scheduling directives of a Job that is
	// suspended and has never started may change (upstream's mutable scheduling directives).
	a, b := job.Spec.Template.DeepCopy(), old.Spec.Template.DeepCopy()
	if job.Spec.Suspend != nil && *job.Spec.Suspend && old.Status.StartTime == nil {
		for _, t := range []*corev1.PodTemplateSpec{a, b} {
			t.Labels, t.Annotations = nil, nil
			t.Spec.NodeSelector, t.Spec.Affinity, t.Spec.Tolerations, t.Spec.SchedulingGates = nil, nil, nil, nil
		}
	}
	if !apiequality.Semantic.DeepEqual(a, b) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("template"), job.Spec.Template, "field is immutable"))
	}
	return allErrs
}

// ---- CronJob ----

// cronJobNameMax leaves room for the 11-character suffix the controller appends to job names.
const cronJobNameMax = 52

func validateCronJob(cj *batchv1.CronJob) field.ErrorList {
	allErrs := objectMeta(&cj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	if len(cj.Name) > cronJobNameMax {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", cronJobNameMax)))
	}
	return append(allErrs, validateCronJobSpec(&cj.Spec, field.NewPath("spec"))...)
}

// ParseCronSchedule parses a CronJob's schedule (five fields or a macro such as @hourly),
// with robfig/cron's standard parser as upstream does. The zone is set by the caller.
func ParseCronSchedule(schedule string) (cron.Schedule, error) {
	return cron.ParseStandard(schedule)
}

func validateCronJobSpec(spec *batchv1.CronJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	sp := fldPath.Child("schedule")
	switch {
	case spec.Schedule == "":
		allErrs = append(allErrs, field.Required(sp, ""))
	case strings.Contains(spec.Schedule, "TZ"):
		allErrs = append(allErrs, field.Invalid(sp, spec.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	default:
		if _, err := ParseCronSchedule(spec.Schedule); err != nil {
			allErrs = append(allErrs, field.Invalid(sp, spec.Schedule, err.Error()))
		}
	}
	if spec.TimeZone != nil {
		tz := *spec.TimeZone
		if tz == "" || strings.EqualFold(tz, "local") {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("timeZone"), tz, "unknown time zone "+tz))
		} else if _, err := time.LoadLocation(tz); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("timeZone"), tz, err.Error()))
		}
	}
	switch spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("concurrencyPolicy"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("concurrencyPolicy"), spec.ConcurrencyPolicy,
			[]string{string(batchv1.AllowConcurrent), string(batchv1.ForbidConcurrent), string(batchv1.ReplaceConcurrent)}))
	}
	if spec.StartingDeadlineSeconds != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(*spec.StartingDeadlineSeconds, fldPath.Child("startingDeadlineSeconds"))...)
	}
	allErrs = append(allErrs, nonNegative(spec.SuccessfulJobsHistoryLimit, fldPath.Child("successfulJobsHistoryLimit"))...)
	allErrs = append(allErrs, nonNegative(spec.FailedJobsHistoryLimit, fldPath.Child("failedJobsHistoryLimit"))...)
	jt := fldPath.Child("jobTemplate")
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.JobTemplate.Labels, jt.Child("metadata", "labels"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(spec.JobTemplate.Annotations, jt.Child("metadata", "annotations"))...)
	return append(allErrs, validateJobSpec(&spec.JobTemplate.Spec, jt.Child("spec"), false)...)
}

func validateCronJobUpdate(cj, old *batchv1.CronJob) field.ErrorList {
	allErrs := metaUpdate(&cj.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validateCronJobSpec(&cj.Spec, field.NewPath("spec"))...)
}
