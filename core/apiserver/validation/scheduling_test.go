package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
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

// The update rules of upstream's declarative tags, with their messages: a PodGroup's
// reference and placement fields are immutable and its gang may be neither set nor
// cleared; a Workload's templates may be neither added nor removed and keep all but
// gang.minCount.
func TestValidateGangKindsImmutableFields(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "g", Namespace: "default", ResourceVersion: "7"}
	gang := func(min int32) schedulingv1beta1.PodGroupSchedulingPolicy {
		return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: min}}
	}
	group := &schedulingv1beta1.PodGroup{ObjectMeta: meta, Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: gang(2),
		WorkloadRef: &schedulingv1beta1.WorkloadReference{WorkloadName: "train", TemplateName: "workers"}, PriorityClassName: "high"}}
	workload := &schedulingv1beta1.Workload{ObjectMeta: meta, Spec: schedulingv1beta1.WorkloadSpec{
		ControllerRef:     &schedulingv1beta1.TypedLocalObjectReference{APIGroup: "batch", Kind: "Job", Name: "train"},
		PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{Name: "driver", SchedulingPolicy: gang(1)}, {Name: "workers", SchedulingPolicy: gang(4)}}}}
	for _, tc := range []struct {
		name   string
		old    runtime.Object
		mutate func(runtime.Object)
		want   []want
	}{
		{"a PodGroup's minCount may change", group, func(o runtime.Object) {
			o.(*schedulingv1beta1.PodGroup).Spec.SchedulingPolicy.Gang.MinCount = 8
		}, nil},
		{"a PodGroup's workload reference is immutable", group, func(o runtime.Object) {
			o.(*schedulingv1beta1.PodGroup).Spec.WorkloadRef.TemplateName = "driver"
		}, []want{{field.ErrorTypeInvalid, "spec.workloadRef", "field is immutable"}}},
		{"a PodGroup's workload reference may not be dropped", group, func(o runtime.Object) {
			o.(*schedulingv1beta1.PodGroup).Spec.WorkloadRef = nil
		}, []want{{field.ErrorTypeInvalid, "spec.workloadRef", "field is immutable"}}},
		{"a PodGroup's priority class is immutable", group, func(o runtime.Object) {
			o.(*schedulingv1beta1.PodGroup).Spec.PriorityClassName = "low"
		}, []want{{field.ErrorTypeInvalid, "spec.priorityClassName", "field is immutable"}}},
		{"a PodGroup's gang may not be cleared", group, func(o runtime.Object) {
			o.(*schedulingv1beta1.PodGroup).Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
		}, []want{{field.ErrorTypeInvalid, "spec.schedulingPolicy.gang", "field cannot be cleared once set"},
			{field.ErrorTypeInvalid, "spec.schedulingPolicy.basic", "field is immutable"}}},
		{"a template's minCount may change", workload, func(o runtime.Object) {
			o.(*schedulingv1beta1.Workload).Spec.PodGroupTemplates[1].SchedulingPolicy.Gang.MinCount = 8
		}, nil},
		{"a template may not be added", workload, func(o runtime.Object) {
			w := o.(*schedulingv1beta1.Workload)
			w.Spec.PodGroupTemplates = append(w.Spec.PodGroupTemplates, schedulingv1beta1.PodGroupTemplate{Name: "ps", SchedulingPolicy: gang(1)})
		}, []want{{field.ErrorTypeForbidden, "spec.podGroupTemplates[2]", "item may not be added"}}},
		{"a template may not be removed", workload, func(o runtime.Object) {
			w := o.(*schedulingv1beta1.Workload)
			w.Spec.PodGroupTemplates = w.Spec.PodGroupTemplates[1:]
		}, []want{{field.ErrorTypeForbidden, "spec.podGroupTemplates", "item may not be removed"}}},
		{"a template's priority class is immutable", workload, func(o runtime.Object) {
			o.(*schedulingv1beta1.Workload).Spec.PodGroupTemplates[0].PriorityClassName = "high"
		}, []want{{field.ErrorTypeInvalid, "spec.podGroupTemplates[0].priorityClassName", "field is immutable"}}},
		{"the controller reference is immutable", workload, func(o runtime.Object) {
			o.(*schedulingv1beta1.Workload).Spec.ControllerRef.Name = "other"
		}, []want{{field.ErrorTypeInvalid, "spec.controllerRef", "field is immutable"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upd := tc.old.DeepCopyObject()
			tc.mutate(upd)
			checkErrors(t, ValidateUpdate(upd, tc.old), tc.want)
		})
	}
}

// A pod's spec.schedulingGroup names a PodGroup by a DNS subdomain, and is fixed after
// creation with upstream's message for every fixed pod field.
func TestPodSchedulingGroup(t *testing.T) {
	withGroup := func(name *string) *corev1.Pod {
		p := validPod()
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: name}
		return p
	}
	checkErrors(t, Validate(withGroup(ptr.To("train"))), nil)
	checkErrors(t, Validate(withGroup(ptr.To("Train_0"))), []want{{field.ErrorTypeInvalid, "spec.schedulingGroup.podGroupName", "a lowercase RFC 1123 subdomain"}})
	checkErrors(t, Validate(withGroup(nil)), []want{{field.ErrorTypeInvalid, "spec.schedulingGroup", "must specify one of: `podGroupName`"}})

	forbidden := []want{{field.ErrorTypeForbidden, "spec", "pod updates may not change fields other than `spec.containers[*].image`"}}
	for _, tc := range []struct {
		name     string
		old, upd *string // nil: no schedulingGroup
	}{
		{"moved to another group", ptr.To("train"), ptr.To("serve")},
		{"taken out of its group", ptr.To("train"), nil},
		{"put into a group", nil, ptr.To("train")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := validPod()
			if tc.old != nil {
				old = withGroup(tc.old)
			}
			old.ResourceVersion = "5"
			upd := old.DeepCopy()
			upd.Spec.SchedulingGroup = nil
			if tc.upd != nil {
				upd.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: tc.upd}
			}
			checkErrors(t, ValidateUpdate(upd, old), forbidden)
		})
	}
}
