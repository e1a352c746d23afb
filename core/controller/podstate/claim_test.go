package podstate

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestClaimAll(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "owner"}
	ref := ControllerRef(owner, "apps/v1", "ReplicaSet")
	other := ref
	other.UID = "someone-else"
	pod := func(name string, app string, refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": app}, OwnerReferences: refs}}
	}
	candidates := []*corev1.Pod{
		pod("owned", "a", ref),       // stays
		pod("orphan", "a"),           // adopted
		pod("moved", "b", ref),       // released: no longer matches
		pod("foreign", "a", other),   // another controller's: untouched
		pod("gone", "a"),             // adoption finds it deleted: skipped, no error
		pod("orphan-other-app", "b"), // does not match: untouched
	}
	var patched []string
	out, err := ClaimAll(context.Background(), candidates, owner, ref, labels.SelectorFromSet(labels.Set{"app": "a"}), "pod",
		func(_ context.Context, ns, name string, patch []byte) error {
			patched = append(patched, name)
			if name == "gone" {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
			}
			return nil
		})
	if err != nil {
		t.Fatalf("ClaimAll: %v", err)
	}
	var names []string
	for _, p := range out {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "owned,orphan" {
		t.Errorf("claimed %s, want owned,orphan", got)
	}
	if got := strings.Join(patched, ","); got != "orphan,moved,gone" {
		t.Errorf("patched %s, want orphan,moved,gone", got)
	}

	// Any other failure is reported with the object's name, and the object is not claimed.
	out, err = ClaimAll(context.Background(), []*corev1.Pod{pod("orphan", "a")}, owner, ref, labels.SelectorFromSet(labels.Set{"app": "a"}), "pod",
		func(context.Context, string, string, []byte) error {
			return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "orphan", nil)
		})
	if err == nil || !strings.Contains(err.Error(), "adopt pod ns/orphan") || len(out) != 0 {
		t.Fatalf("conflict: claimed %d, err %v", len(out), err)
	}
}
