package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateEventsV1 applies upstream's rules for an event written through events.k8s.io/v1
// (ValidateEventCreate with that request version): eventTime, reportingController,
// reportingInstance, action and reason are required, the deprecated* fields of core events
// must be unset, a series counts at least 2.
func validateEventsV1(ev *eventsv1.Event) field.ErrorList {
	allErrs := objectMeta(&ev.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateEventsV1Fields(ev, true)...)
}

// validateEventsV1Update checks an update through events.k8s.io/v1 by the same rules,
// except that an event first written through core/v1 (with its deprecated* fields and,
// perhaps, no eventTime) may be updated as it is.
func validateEventsV1Update(ev, old *eventsv1.Event) field.ErrorList {
	allErrs := metaUpdate(&ev.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validateEventsV1Fields(ev, !old.EventTime.IsZero() && old.DeprecatedCount == 0)...)
}

// validateEventsV1Fields: strict is false for an event first written through core/v1.
func validateEventsV1Fields(ev *eventsv1.Event, strict bool) field.ErrorList {
	var allErrs field.ErrorList
	if !strict {
		if ev.Type != "" && ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
			allErrs = append(allErrs, field.NotSupported(field.NewPath("type"), ev.Type, []string{corev1.EventTypeNormal, corev1.EventTypeWarning}))
		}
		return allErrs
	}
	if ev.EventTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("eventTime"), ""))
	}
	if ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		allErrs = append(allErrs, field.Invalid(field.NewPath("type"), ev.Type, fmt.Sprintf("has invalid value: %v", ev.Type)))
	}
	if !ev.DeprecatedFirstTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("deprecatedFirstTimestamp"), "", "needs to be unset"))
	}
	if !ev.DeprecatedLastTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("deprecatedLastTimestamp"), "", "needs to be unset"))
	}
	if ev.DeprecatedCount != 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("deprecatedCount"), "", "needs to be unset"))
	}
	if ev.DeprecatedSource.Component != "" || ev.DeprecatedSource.Host != "" {
		allErrs = append(allErrs, field.Invalid(field.NewPath("deprecatedSource"), "", "needs to be unset"))
	}
	if s := ev.Series; s != nil {
		if s.Count < 2 {
			allErrs = append(allErrs, field.Invalid(field.NewPath("series", "count"), "", "should be at least 2"))
		}
		if s.LastObservedTime.IsZero() {
			allErrs = append(allErrs, field.Required(field.NewPath("series", "lastObservedTime"), ""))
		}
	}
	if ev.Regarding.Namespace == "" && ev.Namespace != "default" && ev.Namespace != "kube-system" {
		allErrs = append(allErrs, field.Invalid(field.NewPath("regarding", "namespace"), ev.Regarding.Namespace, "does not match event.namespace"))
	}
	if ev.ReportingController == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("reportingController"), ""))
	} else {
		for _, msg := range utilvalidation.IsQualifiedName(ev.ReportingController) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("reportingController"), ev.ReportingController, msg))
		}
	}
	if ev.ReportingInstance == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("reportingInstance"), ""))
	} else if len(ev.ReportingInstance) > eventReportingInstanceLen {
		allErrs = append(allErrs, field.Invalid(field.NewPath("reportingInstance"), "", fmt.Sprintf("can have at most %v characters", eventReportingInstanceLen)))
	}
	if ev.Action == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("action"), ""))
	} else if len(ev.Action) > eventActionLengthLimit {
		allErrs = append(allErrs, field.Invalid(field.NewPath("action"), "", fmt.Sprintf("can have at most %v characters", eventActionLengthLimit)))
	}
	if ev.Reason == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("reason"), ""))
	} else if len(ev.Reason) > eventReasonLengthLimit {
		allErrs = append(allErrs, field.Invalid(field.NewPath("reason"), "", fmt.Sprintf("can have at most %v characters", eventReasonLengthLimit)))
	}
	if len(ev.Note) > eventNoteLengthLimit {
		allErrs = append(allErrs, field.Invalid(field.NewPath("note"), "", fmt.Sprintf("can have at most %v characters", eventNoteLengthLimit)))
	}
	return allErrs
}
