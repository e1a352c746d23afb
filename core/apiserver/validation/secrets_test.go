package validation

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestSecretValidation(t *testing.T) {
	secret := func(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Type: typ, Data: data}
	}
	cases := []struct {
		name  string
		s     *corev1.Secret
		wants []want
	}{
		{"opaque", secret(corev1.SecretTypeOpaque, map[string][]byte{"a": []byte("1"), "b.txt": nil}), nil},
		{"helm release type", secret("helm.sh/release.v1", map[string][]byte{"release": []byte("x")}), nil},
		{"bad key", secret(corev1.SecretTypeOpaque, map[string][]byte{"a/b": nil}), []want{{field.ErrorTypeInvalid, "data[a/b]", "a valid config key"}}},
		{"too large", secret(corev1.SecretTypeOpaque, map[string][]byte{"a": make([]byte, corev1.MaxSecretSize+1)}), []want{{field.ErrorTypeTooLong, "data", ""}}},
		{"tls", secret(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}), nil},
		{"tls without key", secret(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": []byte("c")}), []want{{field.ErrorTypeRequired, "data[tls.key]", ""}}},
		{"dockerconfigjson", secret(corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}), nil},
		{"dockerconfigjson missing", secret(corev1.SecretTypeDockerConfigJson, nil), []want{{field.ErrorTypeRequired, "data[.dockerconfigjson]", ""}}},
		{"dockerconfigjson not json", secret(corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte("hunter2")}), []want{{field.ErrorTypeInvalid, "data[.dockerconfigjson]", "invalid character"}}},
		{"basic-auth", secret(corev1.SecretTypeBasicAuth, map[string][]byte{"password": nil}), nil},
		{"basic-auth empty", secret(corev1.SecretTypeBasicAuth, nil), []want{{field.ErrorTypeRequired, "data[username]", ""}, {field.ErrorTypeRequired, "data[password]", ""}}},
		{"ssh-auth empty", secret(corev1.SecretTypeSSHAuth, map[string][]byte{"ssh-privatekey": nil}), []want{{field.ErrorTypeRequired, "data[ssh-privatekey]", ""}}},
		{"sa token without annotation", secret(corev1.SecretTypeServiceAccountToken, nil), []want{{field.ErrorTypeRequired, "metadata.annotations[kubernetes.io/service-account.name]", ""}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkErrors(t, Validate(c.s), c.wants) })
	}
	// A redacted value never shows the secret.
	errs := Validate(secret(corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte("hunter2")}))
	if len(errs) != 1 || errs[0].BadValue != redacted {
		t.Fatalf("bad value not redacted: %#v", errs)
	}
}

func TestSecretUpdate(t *testing.T) {
	old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", ResourceVersion: "1"}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"a": []byte("1")}, Immutable: ptr.To(true)}
	next := old.DeepCopy()
	next.Type = corev1.SecretTypeTLS
	next.Data["tls.crt"], next.Data["tls.key"] = nil, nil
	next.Immutable = nil
	checkErrors(t, ValidateUpdate(next, old), []want{
		{field.ErrorTypeInvalid, "type", "field is immutable"},
		{field.ErrorTypeForbidden, "immutable", ""},
		{field.ErrorTypeForbidden, "data", ""},
	})
}

func TestTokenRequestValidation(t *testing.T) {
	tr := func(exp int64, ref *authenticationv1.BoundObjectReference) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp, BoundObjectRef: ref}}
	}
	checkErrors(t, ValidateTokenRequest(tr(3600, &authenticationv1.BoundObjectReference{Kind: "Pod", Name: "p"})), nil)
	checkErrors(t, ValidateTokenRequest(tr(60, nil)), []want{{field.ErrorTypeInvalid, "spec.expirationSeconds", "less than 10 minutes"}})
	checkErrors(t, ValidateTokenRequest(tr(1<<33, nil)), []want{{field.ErrorTypeInvalid, "spec.expirationSeconds", "larger than 2^32"}})
	checkErrors(t, ValidateTokenRequest(tr(3600, &authenticationv1.BoundObjectReference{Kind: "Deployment", Name: "d"})), []want{{field.ErrorTypeNotSupported, "spec.boundObjectRef.kind", ""}})
}
