package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// Service account token mount, as upstream.
const (
	// DefaultServiceAccountName is the account of pods that name none.
	DefaultServiceAccountName = "default"
	// ServiceAccountMountPath is where containers find token, ca.crt and namespace.
	ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// RootCAConfigMap is the ConfigMap every namespace gets with the cluster CA (ca.crt).
	RootCAConfigMap = "kube-root-ca.crt"
	// APIAccessVolumePrefix names the projected volume: kube-api-access-xxxxx.
	APIAccessVolumePrefix = "kube-api-access-"
	// TokenExpirationSeconds of the mounted token: upstream's 3607 (one hour and a
	// recognisable 7 s), refreshed by the kubelet at 80% of its life.
	TokenExpirationSeconds = 3607
	mirrorPodAnnotation    = "kubernetes.io/config.mirror"
)

// ServiceAccount is upstream's ServiceAccount admission plugin for pods: the account
// defaults to "default" (spec.serviceAccount mirrors it), the account's imagePullSecrets
// are copied to a pod that has none, and unless automountServiceAccountToken is false on
// the pod or (when the pod does not say) on the account, a projected volume
// kube-api-access-xxxxx with the token, ca.crt and namespace is mounted at
// ServiceAccountMountPath in every container.
//
// As upstream, a pod whose account does not exist is refused (403, `error looking up
// service account NS/NAME: serviceaccount "NAME" not found`), except that the default
// account, which the API server and the controller manager create with the namespace, is
// looked up again for a moment (upstream: 10 attempts 100-200 ms apart) before the pod is
// refused, so a pod created just after its namespace does not lose that race.
type ServiceAccount struct {
	// Get returns the account, or nil when there is none. With Get nil every account is
	// taken to exist and to have no settings (tests of other plugins).
	Get func(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	// DefaultAttempts and DefaultInterval bound the wait for the default account
	// (zero: upstream's 10 attempts, 100-200 ms apart).
	DefaultAttempts int
	DefaultInterval time.Duration
}

// lookup returns the pod's account, waiting briefly for the default one, or the refusal.
func (p ServiceAccount) lookup(ctx context.Context, a *Attributes, name string) (*corev1.ServiceAccount, error) {
	attempts, interval := 1, p.DefaultInterval
	if name == DefaultServiceAccountName {
		attempts = p.DefaultAttempts
		if attempts <= 0 {
			attempts = 10
		}
		if interval <= 0 {
			interval = time.Duration(100+rand.Int64N(100)) * time.Millisecond
		}
	}
	for i := range attempts {
		if i > 0 {
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, Forbidden(a, fmt.Sprintf("error looking up service account %s/%s: %v", a.Namespace, name, ctx.Err()))
			case <-t.C:
			}
		}
		sa, err := p.Get(ctx, a.Namespace, name)
		if err != nil {
			return nil, Forbidden(a, fmt.Sprintf("error looking up service account %s/%s: %v", a.Namespace, name, err))
		}
		if sa != nil {
			return sa, nil
		}
	}
	return nil, Forbidden(a, fmt.Sprintf("error looking up service account %s/%s: serviceaccount %q not found", a.Namespace, name, name))
}

// Admit implements MutationInterface.
func (p ServiceAccount) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || a.Resource.Resource != "pods" {
		return nil
	}
	if a.Operation == Update {
		// Upstream's conversion keeps the deprecated field equal to the name on every
		// write, so a replace from a manifest that names neither reads as no change.
		if pod.Spec.ServiceAccountName == "" {
			pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
		}
		pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
		return nil
	}
	if a.Operation != Create || a.Subresource != "" || pod.Annotations[mirrorPodAnnotation] != "" {
		return nil
	}
	name := pod.Spec.ServiceAccountName
	if name == "" {
		name = pod.Spec.DeprecatedServiceAccount
	}
	if name == "" {
		name = DefaultServiceAccountName
	}
	pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = name, name
	var sa *corev1.ServiceAccount
	if p.Get != nil {
		var err error
		if sa, err = p.lookup(ctx, a, name); err != nil {
			return err
		}
	}
	if sa != nil && len(pod.Spec.ImagePullSecrets) == 0 {
		pod.Spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), sa.ImagePullSecrets...)
	}
	automount := true
	switch {
	case pod.Spec.AutomountServiceAccountToken != nil:
		automount = *pod.Spec.AutomountServiceAccountToken
	case sa != nil && sa.AutomountServiceAccountToken != nil:
		automount = *sa.AutomountServiceAccountToken
	}
	if automount {
		mountAPIAccess(pod)
	}
	return nil
}

// mountAPIAccess adds the projected volume and its mounts, unless a volume already
// mounts the path (a pod that brings its own token keeps it).
func mountAPIAccess(pod *corev1.Pod) {
	all := [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers}
	for _, cs := range all {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				if strings.TrimSuffix(m.MountPath, "/") == ServiceAccountMountPath {
					return
				}
			}
		}
	}
	vol := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, APIAccessVolumePrefix) {
			vol = v.Name
		}
	}
	if vol == "" {
		vol = APIAccessVolumePrefix + utilrand.String(5)
		exp := int64(TokenExpirationSeconds)
		mode := int32(0o644)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: &mode,
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			},
		}}})
	}
	mount := corev1.VolumeMount{Name: vol, ReadOnly: true, MountPath: ServiceAccountMountPath}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].VolumeMounts = append(pod.Spec.InitContainers[i].VolumeMounts, mount)
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts, mount)
	}
}
