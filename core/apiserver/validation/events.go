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
	allErrs = append(allErrs, eventReporting(eventFields{"reportingController", ev.ReportingController, ev.ReportingInstance, ev.Action, ev.Reason, "note", ev.Note})...)
	return allErrs
}

// eventFields are the reporting fields both event APIs require of a new-style event, with
// the names each gives the controller and the message.
type eventFields struct {
	controllerField, controller, instance, action, reason, noteField, note string
}

// eventReporting checks them as upstream's ValidateEventCreate does for both versions.
func eventReporting(f eventFields) field.ErrorList {
	var allErrs field.ErrorList
	if f.controller == "" {
		allErrs = append(allErrs, field.Required(field.NewPath(f.controllerField), ""))
	} else {
		for _, msg := range utilvalidation.IsQualifiedName(f.controller) {
			allErrs = append(allErrs, field.Invalid(field.NewPath(f.controllerField), f.controller, msg))
		}
	}
	for _, c := range []struct {
		name, value string
		limit       int
	}{{"reportingInstance", f.instance, eventReportingInstanceLen}, {"action", f.action, eventActionLengthLimit}, {"reason", f.reason, eventReasonLengthLimit}} {
		if c.value == "" {
			allErrs = append(allErrs, field.Required(field.NewPath(c.name), ""))
		} else if len(c.value) > c.limit {
			allErrs = append(allErrs, field.Invalid(field.NewPath(c.name), "", fmt.Sprintf("can have at most %v characters", c.limit)))
		}
	}
	if len(f.note) > eventNoteLengthLimit {
		allErrs = append(allErrs, field.Invalid(field.NewPath(f.noteField), "", fmt.Sprintf("can have at most %v characters", eventNoteLengthLimit)))
	}
	return allErrs
}
