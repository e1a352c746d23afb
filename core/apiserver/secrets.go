package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// secretFields are the field selectors upstream serves for secrets (kubectl get secrets
// --field-selector type=kubernetes.io/tls; helm lists its releases by label, not field).
func secretFields(o runtime.Object) map[string]string {
	return map[string]string{"type": string(o.(*corev1.Secret).Type)}
}
