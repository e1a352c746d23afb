package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
}

func TestClientGoCRUD(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")

	created, err := pods.Create(ctx, testPod("p1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("server-owned metadata missing: %+v", created.ObjectMeta)
	}
	if created.Status.Phase != corev1.PodPending {
		t.Fatalf("phase = %q, want Pending", created.Status.Phase)
	}
	got, err := pods.Get(ctx, "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.UID != created.UID {
		t.Fatalf("get returned uid %s, want %s", got.UID, created.UID)
	}
	if _, err := pods.Create(ctx, testPod("p1"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v, %d items", err, len(list.Items))
	}
	got.Labels["tier"] = "front"
	upd, err := pods.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if upd.Labels["tier"] != "front" {
		t.Fatalf("update lost label: %v", upd.Labels)
	}
	got.Labels["tier"] = "stale"
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: want Conflict, got %v", err)
	}
	if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := pods.Get(ctx, "p1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: want NotFound, got %v", err)
	}
	nss, err := srv.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil || len(nss.Items) != 4 {
		t.Fatalf("namespaces: %v %d", err, len(nss.Items))
	}
}
