package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type memObjects struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (m memObjects) ConfigMap(_ context.Context, _, name string) (*v1.ConfigMap, error) {
	if cm, ok := m.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (m memObjects) Secret(_ context.Context, _, name string) (*v1.Secret, error) {
	if s, ok := m.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestConfigVolumesAndEnv(t *testing.T) {
	objs := memObjects{
		cms:     map[string]*v1.ConfigMap{"app": {Data: map[string]string{"mode": "fast", "level": "3"}}},
		secrets: map[string]*v1.Secret{"db": {Data: map[string][]byte{"password": []byte("s3cret")}}},
	}
	yes := true
	ro := int32(0o400)
	p := pod(v1.RestartPolicyAlways, nil, "a")
	p.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "db", DefaultMode: &ro, Items: []v1.KeyToPath{{Key: "password", Path: "db/pw"}}}}},
		{Name: "opt", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: &yes}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
		}}}},
	}
	root := t.TempDir()
	paths, unsupported, err := VolumePaths(context.Background(), p, root, objs, "10.42.0.4", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(unsupported, []string{"proj"}) {
		t.Errorf("unsupported %v, want the serviceAccountToken source reported", unsupported)
	}
	for path, want := range map[string]string{
		filepath.Join(paths["cfg"], "mode"):  "fast",
		filepath.Join(paths["sec"], "db/pw"): "s3cret",
		filepath.Join(paths["proj"], "name"): "p",
	} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s = %q %v, want %q", path, b, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(paths["sec"], "db/pw")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("secret file mode %v %v", fi.Mode(), err)
	}
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "missing", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "nope"}}})
	if _, _, err := VolumePaths(context.Background(), p, root, objs, "", ""); err == nil || !contains(err.Error(), "spec.volumes[4]") || !contains(err.Error(), "nope") {
		t.Errorf("missing secret: %v", err)
	}

	c := &p.Spec.Containers[0]
	c.EnvFrom = []v1.EnvFromSource{{Prefix: "APP_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}}
	c.Env = []v1.EnvVar{
		{Name: "APP_mode", Value: "slow"}, // env wins over envFrom
		{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "password"}}},
		{Name: "OPT", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: &yes}}},
	}
	env, err := ContainerEnv(context.Background(), p, c, "spec.containers[0]", "", "", objs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"APP_level=3", "APP_mode=slow", "PW=s3cret"}; !reflect.DeepEqual(env, want) {
		t.Errorf("env %v, want %v", env, want)
	}
	c.Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "db"}, Key: "nokey"}}}}
	if _, err := ContainerEnv(context.Background(), p, c, "spec.containers[0]", "", "", objs); err == nil || !contains(err.Error(), "spec.containers[0].env[0].valueFrom") {
		t.Errorf("missing key: %v", err)
	}
}

func TestCredentialFor(t *testing.T) {
	js := &v1.Secret{Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"127.0.0.1:5000":{"username":"u","password":"p"},"https://index.docker.io/v1/":{"auth":"aHViOnNlY3JldA=="}}}`)}}
	for ref, want := range map[string]*runtimePullAuth{
		"127.0.0.1:5000/app:v1": {"u", "p"},
		"busybox":               {"hub", "secret"},
		"quay.io/x/y:1":         nil,
	} {
		got, err := CredentialFor(ref, []*v1.Secret{js})
		if err != nil {
			t.Fatal(err)
		}
		if (got == nil) != (want == nil) || (got != nil && (got.Username != want.u || got.Password != want.p)) {
			t.Errorf("%s: got %+v, want %+v", ref, got, want)
		}
	}
	bad := &v1.Secret{Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{`)}}
	if _, err := CredentialFor("busybox", []*v1.Secret{bad}); err == nil {
		t.Error("malformed secret accepted")
	}
}

type runtimePullAuth struct{ u, p string }
