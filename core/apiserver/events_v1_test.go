package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestEventsV1 serves events.k8s.io/v1 beside core/v1 over the same objects, as upstream:
// a core event reads as a v1 one (message as note, involvedObject as regarding, the
// deprecated* fields), a v1 event reads as a core one, v1 list and watch see core writes,
// a v1 event missing upstream's required fields is a 422 naming them, and kubectl gets
// events.events.k8s.io with the core columns.
func TestEventsV1(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	pod := corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", APIVersion: "v1"}

	core, err := srv.Client.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.1"}, InvolvedObject: pod, Reason: "Pulled", Message: "image pulled",
		Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "kubelet", Host: "n1"}, FirstTimestamp: now, LastTimestamp: now, Count: 2,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := srv.Client.EventsV1().Events("default").Get(ctx, "web.1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Note != "image pulled" || ev.Regarding != pod || ev.Reason != "Pulled" || ev.DeprecatedCount != 2 ||
		ev.DeprecatedSource.Component != "kubelet" || ev.ResourceVersion != core.ResourceVersion {
		t.Fatalf("core event as events.k8s.io/v1: %+v", ev)
	}

	list, err := srv.Client.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "web.1" {
		t.Fatalf("events.k8s.io/v1 list: %+v", list.Items)
	}
	w, err := srv.Client.EventsV1().Events("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// A v1 write, as kube-scheduler's event recorder makes it.
	v1 := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.2"}, EventTime: metav1.NewMicroTime(now.Time), Regarding: pod,
		ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-h1", Action: "Binding",
		Reason: "Scheduled", Note: "Successfully assigned default/web to n1", Type: corev1.EventTypeNormal,
	}
	if _, err := srv.Client.EventsV1().Events("default").Create(ctx, v1, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := srv.Client.CoreV1().Events("default").Get(ctx, "web.2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Message != v1.Note || c.InvolvedObject != pod || c.ReportingController != "default-scheduler" || c.Action != "Binding" {
		t.Fatalf("events.k8s.io/v1 event as core/v1: %+v", c)
	}
	select {
	case e := <-w.ResultChan():
		got, ok := e.Object.(*eventsv1.Event)
		if e.Type != watch.Added || !ok || got.Name != "web.2" || got.Note != v1.Note {
			t.Fatalf("events.k8s.io/v1 watch: %s %#v", e.Type, e.Object)
		}
	case <-ctx.Done():
		t.Fatal("no events.k8s.io/v1 watch event for the create")
	}

	bad := v1.DeepCopy()
	bad.Name, bad.ReportingController, bad.DeprecatedCount = "web.3", "", 4
	_, err = srv.Client.EventsV1().Events("default").Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "reportingController: Required value") || !strings.Contains(err.Error(), "deprecatedCount: Invalid value") {
		t.Fatalf("invalid events.k8s.io/v1 event: %v", err)
	}

	k := newKubectl(t, srv)
	out := k.ok("get", "events.v1.events.k8s.io", "-n", "default")
	if h := header(out); h != "LAST SEEN TYPE REASON OBJECT MESSAGE" {
		t.Errorf("kubectl get events.events.k8s.io columns: %q\n%s", h, out)
	}
	if !strings.Contains(out, "Scheduled") || !strings.Contains(out, "Pulled") || !strings.Contains(out, "pod/web") {
		t.Errorf("kubectl get events.events.k8s.io:\n%s", out)
	}
}
