package wasmpolicy

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/plugins/wasmoci"
)

// PullSecretsKeychain reads the docker-config Secrets a policy's imagePullSecrets name and
// returns their credentials as one keychain, the first Secret that names a registry
// winning. The wasmpolicy controller resolves tags with it and components fetch with it.
func PullSecretsKeychain(ctx context.Context, client kubernetes.Interface, refs []corev1.SecretReference) (authn.Keychain, error) {
	if client == nil {
		return nil, fmt.Errorf("imagePullSecrets: no API client to read them")
	}
	var data [][]byte
	for i, r := range refs {
		ns := r.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		sec, err := client.CoreV1().Secrets(ns).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("imagePullSecrets[%d] %s/%s: %w", i, ns, r.Name, err)
		}
		switch {
		case len(sec.Data[corev1.DockerConfigJsonKey]) > 0:
			data = append(data, sec.Data[corev1.DockerConfigJsonKey])
		case len(sec.Data[corev1.DockerConfigKey]) > 0:
			data = append(data, sec.Data[corev1.DockerConfigKey])
		default:
			return nil, fmt.Errorf("imagePullSecrets[%d] %s/%s: neither %s nor %s", i, ns, r.Name, corev1.DockerConfigJsonKey, corev1.DockerConfigKey)
		}
	}
	return keychainOf(data)
}

// keychainOf is the keychains of several docker configs, the first that has credentials
// for a registry winning (authn.NewMultiKeychain skips the anonymous answers).
func keychainOf(configs [][]byte) (authn.Keychain, error) {
	var kcs []authn.Keychain
	for _, c := range configs {
		kc, err := wasmoci.KeychainFromDockerConfig(c)
		if err != nil {
			return nil, err
		}
		kcs = append(kcs, kc)
	}
	return authn.NewMultiKeychain(kcs...), nil
}
