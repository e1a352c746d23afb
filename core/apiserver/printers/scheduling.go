package printers

import (
	"strconv"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Columns for the gang-scheduling kinds (scheduling.k8s.io/v1beta1): what `kubectl get`
// shows of a Workload (its templates and their policies) and a PodGroup (its policy, the
// gang's minCount, its workload and whether it was scheduled).

var (
	workloadColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Templates", Type: "integer", Description: "The number of pod group templates."},
		{Name: "Controller", Type: "string", Description: schedulingv1beta1.WorkloadSpec{}.SwaggerDoc()["controllerRef"]},
		ageColumn,
	}
	podGroupColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Policy", Type: "string", Description: "Gang (all or nothing) or Basic."},
		{Name: "Min Count", Type: "string", Description: schedulingv1beta1.GangSchedulingPolicy{}.SwaggerDoc()["minCount"]},
		{Name: "Workload", Type: "string", Description: "The Workload and template the group was made from."},
		{Name: "Scheduled", Type: "string", Description: "The condition " + schedulingv1beta1.PodGroupInitiallyScheduled + "."},
		ageColumn,
	}
)

func printWorkload(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	w, ok := obj.(*schedulingv1beta1.Workload)
	if !ok {
		return nil, nil, false
	}
	ctrl := "<none>"
	if r := w.Spec.ControllerRef; r != nil {
		ctrl = r.Kind + "/" + r.Name
	}
	return []any{w.Name, int64(len(w.Spec.PodGroupTemplates)), ctrl, age(w.CreationTimestamp, now)}, nil, true
}

func printPodGroup(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	g, ok := obj.(*schedulingv1beta1.PodGroup)
	if !ok {
		return nil, nil, false
	}
	policy, min := "Basic", "<none>"
	if gang := g.Spec.SchedulingPolicy.Gang; gang != nil {
		policy, min = "Gang", strconv.Itoa(int(gang.MinCount))
	}
	wl := "<none>"
	if r := g.Spec.WorkloadRef; r != nil {
		wl = r.WorkloadName + "/" + r.TemplateName
	}
	scheduled := "Unknown"
	for _, c := range g.Status.Conditions {
		if c.Type == schedulingv1beta1.PodGroupInitiallyScheduled {
			scheduled = string(c.Status)
		}
	}
	return []any{g.Name, policy, min, wl, scheduled, age(g.CreationTimestamp, now)}, nil, true
}

func init() {
	register(schedulingv1beta1.SchemeGroupVersion.WithKind("Workload"), workloadColumns, printWorkload)
	register(schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"), podGroupColumns, printPodGroup)
}
