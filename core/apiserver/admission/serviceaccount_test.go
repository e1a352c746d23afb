package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestServiceAccountAdmission(t *testing.T) {
	accounts := map[string]*corev1.ServiceAccount{
		"default": {ObjectMeta: metav1.ObjectMeta{Name: "default"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}},
		"quiet":   {ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: ptr.To(false)},
	}
	p := ServiceAccount{Get: func(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) { return accounts[name], nil }}
	admit := func(spec corev1.PodSpec) *corev1.Pod {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: spec}
		a := &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "ns", Object: pod}
		if err := p.Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		return pod
	}
	two := corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i"}}, Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}

	pod := admit(*two.DeepCopy())
	if pod.Spec.ServiceAccountName != "default" || pod.Spec.DeprecatedServiceAccount != "default" {
		t.Fatalf("account %q/%q", pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount)
	}
	if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "regcred" {
		t.Fatalf("imagePullSecrets %v", pod.Spec.ImagePullSecrets)
	}
	if len(pod.Spec.Volumes) != 1 || !strings.HasPrefix(pod.Spec.Volumes[0].Name, APIAccessVolumePrefix) || len(pod.Spec.Volumes[0].Name) != len(APIAccessVolumePrefix)+5 {
		t.Fatalf("volumes %v", pod.Spec.Volumes)
	}
	src := pod.Spec.Volumes[0].Projected.Sources
	if len(src) != 3 || src[0].ServiceAccountToken == nil || *src[0].ServiceAccountToken.ExpirationSeconds != 3607 || src[1].ConfigMap.Name != RootCAConfigMap || src[2].DownwardAPI.Items[0].Path != "namespace" {
		t.Fatalf("projection %+v", src)
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != ServiceAccountMountPath || !c.VolumeMounts[0].ReadOnly {
			t.Fatalf("container %s mounts %v", c.Name, c.VolumeMounts)
		}
	}

	// The deprecated field names the account; its automount false is honoured.
	spec := *two.DeepCopy()
	spec.DeprecatedServiceAccount = "quiet"
	if pod := admit(spec); pod.Spec.ServiceAccountName != "quiet" || len(pod.Spec.Volumes) != 0 {
		t.Fatalf("quiet account: %q, volumes %v", pod.Spec.ServiceAccountName, pod.Spec.Volumes)
	}
	// The pod's own setting wins over the account's, both ways.
	spec = *two.DeepCopy()
	spec.ServiceAccountName, spec.AutomountServiceAccountToken = "quiet", ptr.To(true)
	if pod := admit(spec); len(pod.Spec.Volumes) != 1 {
		t.Fatal("pod automount true over account false: no volume")
	}
	spec = *two.DeepCopy()
	spec.AutomountServiceAccountToken = ptr.To(false)
	if pod := admit(spec); len(pod.Spec.Volumes) != 0 {
		t.Fatal("pod automount false: volume added")
	}
	// A pod that mounts something at the path keeps it.
	spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: ServiceAccountMountPath}}}}}
	if pod := admit(spec); len(pod.Spec.Volumes) != 0 || len(pod.Spec.Containers[0].VolumeMounts) != 1 {
		t.Fatalf("own mount replaced: %v", pod.Spec)
	}
}

// As upstream: a pod naming an account that does not exist is refused at once; the
// default account is looked up again for a moment first, so a pod created right after
// its namespace waits for it instead of failing.
func TestServiceAccountAdmissionMissingAccount(t *testing.T) {
	calls := map[string]int{}
	defaultAfter := 0 // the default account appears at this lookup (0: never)
	p := ServiceAccount{DefaultAttempts: 4, DefaultInterval: time.Millisecond,
		Get: func(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
			calls[name]++
			if name == DefaultServiceAccountName && defaultAfter > 0 && calls[name] >= defaultAfter {
				return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, nil
			}
			return nil, nil
		}}
	admit := func(sa string) (*corev1.Pod, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "team"},
			Spec: corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "a"}}}}
		a := &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "team", Name: "web-0", Object: pod}
		err := p.Admit(context.Background(), a)
		return pod, err
	}

	_, err := admit("builder")
	want := `pods "web-0" is forbidden: error looking up service account team/builder: serviceaccount "builder" not found`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("missing account: %v, want %s", err, want)
	}
	if calls["builder"] != 1 {
		t.Fatalf("a named account was looked up %d times, want once", calls["builder"])
	}

	_, err = admit("")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `service account team/default: serviceaccount "default" not found`) {
		t.Fatalf("missing default account: %v", err)
	}
	if calls["default"] != 4 {
		t.Fatalf("the default account was looked up %d times, want DefaultAttempts (4)", calls["default"])
	}

	calls, defaultAfter = map[string]int{}, 3
	pod, err := admit("")
	if err != nil || pod.Spec.ServiceAccountName != DefaultServiceAccountName || len(pod.Spec.Volumes) != 1 {
		t.Fatalf("default account appearing on the third look: %v, %+v", err, pod.Spec)
	}

	// Mirror pods and updates are not looked up.
	calls = map[string]int{}
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "team", Annotations: map[string]string{mirrorPodAnnotation: "x"}},
		Spec: corev1.PodSpec{ServiceAccountName: "builder"}}
	if err := p.Admit(context.Background(), &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "team", Object: mirror}); err != nil || calls["builder"] != 0 {
		t.Fatalf("mirror pod: %v, %d lookups", err, calls["builder"])
	}
}
