package printers

import (
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/conversion"
)

// printEventsV1 prints an events.k8s.io/v1 Event with core events' columns, as upstream
// (both print through the internal Event).
func printEventsV1(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, nil, false
	}
	return printEvent(conversion.EventFromEventsV1(ev), now)
}

func init() {
	register(eventsv1.SchemeGroupVersion.WithKind("Event"), eventColumns, printEventsV1)
}
