package validation

import (
	"strings"
	"testing"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestValidateGangKinds(t *testing.T) {
	gang := func(min int32) schedulingv1beta1.PodGroupSchedulingPolicy {
		return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: min}}
	}
	meta := metav1.ObjectMeta{Name: "g", Namespace: "default"}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want string // a substring of the errors; "" for none
	}{
		{"a gang group", &schedulingv1beta1.PodGroup{ObjectMeta: meta, Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: gang(3)}}, ""},
		{"minCount 0", &schedulingv1beta1.PodGroup{ObjectMeta: meta, Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: gang(0)}}, "spec.schedulingPolicy.gang.minCount"},
		{"no policy", &schedulingv1beta1.PodGroup{ObjectMeta: meta}, "spec.schedulingPolicy: Required value"},
		{"both policies", &schedulingv1beta1.PodGroup{ObjectMeta: meta, Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Basic: &schedulingv1beta1.BasicSchedulingPolicy{}, Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1}}}}, "exactly one of basic or gang"},
		{"bad template name in the workload ref", &schedulingv1beta1.PodGroup{ObjectMeta: meta, Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: gang(1),
			WorkloadRef: &schedulingv1beta1.WorkloadReference{WorkloadName: "w", TemplateName: "Not_A_Label"}}}, "spec.workloadRef.templateName"},
		{"a workload", &schedulingv1beta1.Workload{ObjectMeta: meta, Spec: schedulingv1beta1.WorkloadSpec{PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{
			{Name: "workers", SchedulingPolicy: gang(4)}}}}, ""},
		{"a workload without templates", &schedulingv1beta1.Workload{ObjectMeta: meta}, "spec.podGroupTemplates: Required value"},
		{"duplicate templates", &schedulingv1beta1.Workload{ObjectMeta: meta, Spec: schedulingv1beta1.WorkloadSpec{PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{
			{Name: "w", SchedulingPolicy: gang(1)}, {Name: "w", SchedulingPolicy: gang(1)}}}}, "spec.podGroupTemplates[1].name: Duplicate value"},
	} {
		errs, ok := validateScheduling(tc.obj)
		if !ok {
			t.Fatalf("%s: not a scheduling kind", tc.name)
		}
		got := errs.ToAggregate()
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("%s: %v, want no error", tc.name, got)
		case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", tc.name, got, tc.want)
		}
	}
}

// An update of either kind with its resourceVersion is valid; a changed policy kind is not.
func TestValidateGangKindsUpdate(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "g", Namespace: "default", ResourceVersion: "7"}
	old := &schedulingv1beta1.PodGroup{ObjectMeta: meta, Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
		Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}}}}
	upd := old.DeepCopy()
	upd.Spec.SchedulingPolicy.Gang.MinCount = 3 // minCount may change
	if errs := ValidateUpdate(upd, old); len(errs) != 0 {
		t.Fatalf("a minCount change: %v", errs)
	}
	upd.Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
	if errs := ValidateUpdate(upd, old); !strings.Contains(errs.ToAggregate().Error(), "spec.schedulingPolicy.gang") {
		t.Fatalf("gang to basic: %v, want a refusal naming spec.schedulingPolicy.gang", errs)
	}
}
