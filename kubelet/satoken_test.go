package kubelet

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The projected token is requested bound to the pod with the projection's audience and
// expiry, written into the volume, renewed at 80% of its life, and forgotten with the pod.
func TestProjectedTokenRenewal(t *testing.T) {
	client := fake.NewSimpleClientset()
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var requests []*authenticationv1.TokenRequest
	podGone := false
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		if podGone {
			return true, nil, apierrors.NewNotFound(v1.Resource("pods"), "web")
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		requests = append(requests, tr)
		tr.Status.Token = fmt.Sprintf("token-%d", len(requests))
		tr.Status.ExpirationTimestamp = metav1.NewTime(now.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
	root := t.TempDir()
	m := newTokenManager(client, root, slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.now = func() time.Time { return now }
	defer m.Close()
	objs := apiObjects{c: client, tokens: m}

	exp := int64(3600)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}, Spec: v1.PodSpec{ServiceAccountName: "app",
		Volumes: []v1.Volume{{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
			Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: &exp}}}}}}}}}
	files, unsupported, err := VolumeFiles(context.Background(), pod, &pod.Spec.Volumes[0], objs, "", "")
	if err != nil || len(unsupported) != 0 || string(files["token"].data) != "token-1" {
		t.Fatalf("files %v unsupported %v err %v", files, unsupported, err)
	}
	r := requests[0]
	if r.Spec.BoundObjectRef == nil || r.Spec.BoundObjectRef.Kind != "Pod" || r.Spec.BoundObjectRef.Name != "web" || r.Spec.BoundObjectRef.UID != "uid-1" ||
		len(r.Spec.Audiences) != 1 || r.Spec.Audiences[0] != "vault" {
		t.Fatalf("token request %+v", r.Spec)
	}
	dir := filepath.Join(PodDir(root, "uid-1"), "volumes", "kube-api-access-abcde")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeVolumeFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	read := func() string { b, _ := os.ReadFile(filepath.Join(dir, "token")); return string(b) }

	now = now.Add(47 * time.Minute) // before 80% of an hour: nothing to do
	m.refreshDue(context.Background())
	if len(requests) != 1 || read() != "token-1" {
		t.Fatalf("renewed early: %d requests, file %q", len(requests), read())
	}
	now = now.Add(2 * time.Minute) // 49 minutes: due
	m.refreshDue(context.Background())
	if len(requests) != 2 || read() != "token-2" {
		t.Fatalf("not renewed: %d requests, file %q", len(requests), read())
	}
	// The pod is gone from the API: the entry is dropped, not retried forever.
	podGone = true
	now = now.Add(time.Hour)
	m.refreshDue(context.Background())
	if len(m.entries) != 0 {
		t.Fatalf("entries kept after the pod is gone: %v", m.entries)
	}
	// Without a token source, the source is reported unsupported.
	if _, unsupported, _ := VolumeFiles(context.Background(), pod, &pod.Spec.Volumes[0], memObjects{}, "", ""); len(unsupported) != 1 {
		t.Fatalf("unsupported = %v", unsupported)
	}
}
