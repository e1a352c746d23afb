package printers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Upstream's columns (pkg/printers/internalversion) for StatefulSets, DaemonSets,
// ControllerRevisions, Jobs and CronJobs.

var (
	containersColumn = metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
	imagesColumn     = metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
)

var statefulSetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
	ageColumn, containersColumn, imagesColumn,
}

func printStatefulSet(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	ss, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return nil, nil, false
	}
	names, images := containerCells(ss.Spec.Template.Spec.Containers)
	return []any{ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, replicas(ss.Spec.Replicas)), age(ss.CreationTimestamp, now), names, images}, nil, true
}

var daemonSetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Desired", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]},
	{Name: "Current", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]},
	{Name: "Ready", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]},
	{Name: "Up-to-date", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]},
	{Name: "Available", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]},
	{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
	ageColumn, containersColumn, imagesColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]},
}

func printDaemonSet(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	ds, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return nil, nil, false
	}
	st := &ds.Status
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	return []any{ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		age(ds.CreationTimestamp, now), names, images, selectorString(ds.Spec.Selector)}, nil, true
}

var controllerRevisionColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Controller", Type: "string", Description: "Controller of the object"},
	{Name: "Revision", Type: "integer", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
	ageColumn,
}

func printControllerRevision(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	cr, ok := obj.(*appsv1.ControllerRevision)
	if !ok {
		return nil, nil, false
	}
	controller := "<none>"
	if ref := metav1.GetControllerOf(cr); ref != nil {
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
	}
	return []any{cr.Name, controller, cr.Revision, age(cr.CreationTimestamp, now)}, nil, true
}

var jobColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Status", Type: "string", Description: "Status of the job."},
	{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
	{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
	ageColumn, containersColumn, imagesColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
}

func jobCondition(st *batchv1.JobStatus, t batchv1.JobConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// jobStatusWord is the STATUS column of `kubectl get jobs`.
func jobStatusWord(j *batchv1.Job) string {
	switch {
	case jobCondition(&j.Status, batchv1.JobComplete):
		return "Complete"
	case jobCondition(&j.Status, batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case jobCondition(&j.Status, batchv1.JobSuspended):
		return "Suspended"
	case jobCondition(&j.Status, batchv1.JobFailureTarget):
		return "FailureTarget"
	case jobCondition(&j.Status, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

func printJob(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return nil, nil, false
	}
	var completions string
	if j.Spec.Completions != nil {
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	} else if j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1 {
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	} else {
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var dur string
	switch {
	case j.Status.StartTime == nil:
	case j.Status.CompletionTime == nil:
		dur = duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	default:
		dur = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
	names, images := containerCells(j.Spec.Template.Spec.Containers)
	return []any{j.Name, jobStatusWord(j), completions, dur, age(j.CreationTimestamp, now), names, images, selectorString(j.Spec.Selector)}, nil, true
}

var cronJobColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Schedule", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]},
	{Name: "Timezone", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]},
	{Name: "Suspend", Type: "boolean", Description: batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]},
	{Name: "Active", Type: "integer", Description: batchv1.CronJobStatus{}.SwaggerDoc()["active"]},
	{Name: "Last Schedule", Type: "string", Description: batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]},
	ageColumn, containersColumn, imagesColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
}

func printCronJob(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	cj, ok := obj.(*batchv1.CronJob)
	if !ok {
		return nil, nil, false
	}
	last := "<none>"
	if cj.Status.LastScheduleTime != nil {
		last = age(*cj.Status.LastScheduleTime, now)
	}
	tz := "<none>"
	if cj.Spec.TimeZone != nil {
		tz = *cj.Spec.TimeZone
	}
	suspend := "<unset>"
	if cj.Spec.Suspend != nil {
		suspend = "False"
		if *cj.Spec.Suspend {
			suspend = "True"
		}
	}
	names, images := containerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return []any{cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last, age(cj.CreationTimestamp, now),
		names, images, selectorString(cj.Spec.JobTemplate.Spec.Selector)}, nil, true
}

func init() {
	apps := appsv1.SchemeGroupVersion.WithKind
	register(apps("StatefulSet"), statefulSetColumns, printStatefulSet)
	register(apps("DaemonSet"), daemonSetColumns, printDaemonSet)
	register(apps("ControllerRevision"), controllerRevisionColumns, printControllerRevision)
	register(batchv1.SchemeGroupVersion.WithKind("Job"), jobColumns, printJob)
	register(batchv1.SchemeGroupVersion.WithKind("CronJob"), cronJobColumns, printCronJob)
}
