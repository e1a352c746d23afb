package kubelet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

type dockerAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// CredentialFor finds the credential for image ref's registry in the contents of
// kubernetes.io/dockerconfigjson (or legacy dockercfg) secrets, in order. Keys may be bare
// hosts or URLs ("https://index.docker.io/v1/" for Docker Hub).
func CredentialFor(ref string, secrets []*v1.Secret) (*runtime.PullAuth, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", ref, err)
	}
	host := reference.Domain(named)
	for _, s := range secrets {
		auths := map[string]dockerAuth{}
		if b, ok := s.Data[v1.DockerConfigJsonKey]; ok {
			var cfg struct {
				Auths map[string]dockerAuth `json:"auths"`
			}
			if err := json.Unmarshal(b, &cfg); err != nil {
				return nil, fmt.Errorf("secret %q: %s: %w", s.Name, v1.DockerConfigJsonKey, err)
			}
			auths = cfg.Auths
		} else if b, ok := s.Data[v1.DockerConfigKey]; ok {
			if err := json.Unmarshal(b, &auths); err != nil {
				return nil, fmt.Errorf("secret %q: %s: %w", s.Name, v1.DockerConfigKey, err)
			}
		}
		for key, a := range auths {
			k := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
			k = strings.SplitN(k, "/", 2)[0]
			if k == host || (host == "docker.io" && (k == "index.docker.io" || k == "registry-1.docker.io")) {
				if a.Username == "" && a.Auth != "" {
					dec, err := base64.StdEncoding.DecodeString(a.Auth)
					if err != nil {
						return nil, fmt.Errorf("secret %q: auth for %s is not base64", s.Name, key)
					}
					a.Username, a.Password, _ = strings.Cut(string(dec), ":")
				}
				return &runtime.PullAuth{Username: a.Username, Password: a.Password}, nil
			}
		}
	}
	return nil, nil
}

// pullAuth reads the pod's imagePullSecrets (missing ones are skipped, as in Kubernetes)
// and picks the credential for ref.
func (k *Kubelet) pullAuth(ctx context.Context, pod *v1.Pod, ref string) (*runtime.PullAuth, error) {
	if len(pod.Spec.ImagePullSecrets) == 0 || k.objects == nil {
		return nil, nil
	}
	var secrets []*v1.Secret
	for _, r := range pod.Spec.ImagePullSecrets {
		s, err := k.objects.Secret(ctx, pod.Namespace, r.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("imagePullSecret %q: %w", r.Name, err)
		}
		secrets = append(secrets, s)
	}
	return CredentialFor(ref, secrets)
}
