package conversion

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

// Events are stored as core/v1 Events and served in events.k8s.io/v1 too: the same
// objects, as upstream (pkg/apis/events/v1/conversion.go): regarding is involvedObject,
// note is message, and the deprecated* fields are core's source, firstTimestamp,
// lastTimestamp and count.

// EventToEventsV1 is a stored core/v1 Event as events.k8s.io/v1 serves it.
func EventToEventsV1(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta: in.ObjectMeta, EventTime: in.EventTime,
		ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance,
		Action: in.Action, Reason: in.Reason, Regarding: in.InvolvedObject, Related: in.Related,
		Note: in.Message, Type: in.Type,
		DeprecatedSource: in.Source, DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp: in.LastTimestamp, DeprecatedCount: in.Count,
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

// EventFromEventsV1 is an events.k8s.io/v1 Event as it is stored (core/v1).
func EventFromEventsV1(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta: in.ObjectMeta, EventTime: in.EventTime,
		ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance,
		Action: in.Action, Reason: in.Reason, InvolvedObject: in.Regarding, Related: in.Related,
		Message: in.Note, Type: in.Type,
		Source: in.DeprecatedSource, FirstTimestamp: in.DeprecatedFirstTimestamp,
		LastTimestamp: in.DeprecatedLastTimestamp, Count: in.DeprecatedCount,
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}
