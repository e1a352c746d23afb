package validation

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// redacted stands for a secret's value in an error, as upstream: errors are logged and
// shown, values must not be.
const redacted = "<secret contents redacted>"

// validateSecret is upstream's ValidateSecret: key names, the 1 MiB limit and the keys
// each well-known type requires.
func validateSecret(s *corev1.Secret) field.ErrorList {
	allErrs := objectMeta(&s.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateSecretData(s)...)
}

func validateSecretData(s *corev1.Secret) field.ErrorList {
	var allErrs field.ErrorList
	dataPath := field.NewPath("data")
	total := 0
	for _, key := range slices.Sorted(maps.Keys(s.Data)) {
		for _, msg := range utilvalidation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), key, msg))
		}
		total += len(s.Data[key])
	}
	if total > corev1.MaxSecretSize {
		allErrs = append(allErrs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	require := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				allErrs = append(allErrs, field.Required(dataPath.Key(k), ""))
			}
		}
	}
	jsonKey := func(k string) {
		if v, ok := s.Data[k]; ok {
			var m map[string]any
			if err := json.Unmarshal(v, &m); err != nil {
				allErrs = append(allErrs, field.Invalid(dataPath.Key(k), redacted, err.Error()))
			}
		} else {
			require(k)
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			allErrs = append(allErrs, field.Required(metaPath.Child("annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeOpaque, "":
	case corev1.SecretTypeDockercfg:
		jsonKey(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		jsonKey(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		// Either may be empty, but one of them must be there.
		if !user && !pass {
			require(corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		require(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	default:
		// Any other type (helm.sh/release.v1, ...) is the user's own: no keys required.
	}
	return allErrs
}

func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	allErrs := metaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateSecretData(s)...)
	if s.Type != old.Type {
		allErrs = append(allErrs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
	}
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !maps.EqualFunc(s.Data, old.Data, bytes.Equal) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
	}
	return allErrs
}

func validateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	allErrs := objectMeta(&sa.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateServiceAccountRefs(sa)...)
}

func validateServiceAccountRefs(sa *corev1.ServiceAccount) field.ErrorList {
	var allErrs field.ErrorList
	for i, ref := range sa.ImagePullSecrets {
		if ref.Name == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return allErrs
}

// MinTokenExpirationSeconds is the shortest token a TokenRequest may ask for, as upstream.
const MinTokenExpirationSeconds = 10 * 60

// ValidateTokenRequest is upstream's ValidateTokenRequest.
func ValidateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var allErrs field.ErrorList
	specPath := field.NewPath("spec")
	if tr.Spec.ExpirationSeconds != nil {
		switch e := *tr.Spec.ExpirationSeconds; {
		case e < MinTokenExpirationSeconds:
			allErrs = append(allErrs, field.Invalid(specPath.Child("expirationSeconds"), e, "may not specify a duration less than 10 minutes"))
		case e > 1<<32:
			allErrs = append(allErrs, field.Invalid(specPath.Child("expirationSeconds"), e, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	if b := tr.Spec.BoundObjectRef; b != nil {
		p := specPath.Child("boundObjectRef")
		switch {
		case b.Kind != "Pod" && b.Kind != "Secret" && b.Kind != "Node":
			allErrs = append(allErrs, field.NotSupported(p.Child("kind"), b.Kind, []string{"Pod", "Secret", "Node"}))
		case b.Name == "":
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		}
		if b.APIVersion != "" && b.APIVersion != "v1" {
			allErrs = append(allErrs, field.NotSupported(p.Child("apiVersion"), b.APIVersion, []string{"v1"}))
		}
	}
	return allErrs
}
