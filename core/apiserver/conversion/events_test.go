package conversion

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every field of a core/v1 Event survives the trip through events.k8s.io/v1, under
// upstream's names.
func TestEventRoundTrip(t *testing.T) {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	in := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "default", ResourceVersion: "7"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:         "Scheduled", Message: "assigned default/web to n1", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "scheduler"}, FirstTimestamp: now, LastTimestamp: now, Count: 3,
		EventTime: metav1.NewMicroTime(now.Time), Series: &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now.Time)},
		Action: "Binding", Related: &corev1.ObjectReference{Kind: "Node", Name: "n1"},
		ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-h1",
	}
	v1 := EventToEventsV1(in)
	if v1.Note != in.Message || v1.Regarding != in.InvolvedObject || v1.DeprecatedCount != 3 || v1.DeprecatedSource.Component != "scheduler" {
		t.Fatalf("events.k8s.io/v1 view: %+v", v1)
	}
	if back := EventFromEventsV1(v1); !equality.Semantic.DeepEqual(back, in) {
		t.Fatalf("round trip changed the event:\n got %+v\nwant %+v", back, in)
	}
}
