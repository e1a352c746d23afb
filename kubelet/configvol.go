package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Objects reads the ConfigMaps and Secrets that pods refer to.
type Objects interface {
	ConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, ns, name string) (*v1.Secret, error)
}

type apiObjects struct {
	c      kubernetes.Interface
	tokens *tokenManager // service account tokens of projected volumes
}

// PodToken implements tokenSource.
func (o apiObjects) PodToken(ctx context.Context, pod *v1.Pod, volume string, proj *v1.ServiceAccountTokenProjection, mode os.FileMode) ([]byte, error) {
	if o.tokens == nil {
		return nil, fmt.Errorf("no token manager")
	}
	return o.tokens.PodToken(ctx, pod, volume, proj, mode)
}

func (o apiObjects) ConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	return o.c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (o apiObjects) Secret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	return o.c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

// volFile is one file of a configMap, secret, downwardAPI or projected volume.
type volFile struct {
	data []byte
	mode os.FileMode
}

func keyData(cm *v1.ConfigMap, s *v1.Secret) map[string][]byte {
	out := map[string][]byte{}
	if cm != nil {
		for k, v := range cm.Data {
			out[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			out[k] = v
		}
	}
	if s != nil {
		for k, v := range s.Data {
			out[k] = v
		}
		for k, v := range s.StringData {
			out[k] = []byte(v)
		}
	}
	return out
}

// projectKeys applies items (or all keys) and modes to one object's data.
func projectKeys(files map[string]volFile, data map[string][]byte, items []v1.KeyToPath, mode int32, optional bool, what string) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = volFile{v, os.FileMode(mode)}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("%s has no key %q", what, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = *it.Mode
		}
		files[it.Path] = volFile{v, os.FileMode(m)}
	}
	return nil
}

func mode(m *int32) int32 {
	if m != nil {
		return *m
	}
	return 0o644
}

// VolumeFiles computes the files of a configMap, secret, downwardAPI or projected volume
// (serviceAccountToken sources through objs' tokenSource, renewed from then on).
// unsupported names sources the kubelet cannot fill.
func VolumeFiles(ctx context.Context, pod *v1.Pod, vol *v1.Volume, objs Objects, podIP, hostIP string) (files map[string]volFile, unsupported []string, err error) {
	files = map[string]volFile{}
	cm := func(name string, optional *bool, items []v1.KeyToPath, m int32) error {
		obj, err := objs.ConfigMap(ctx, pod.Namespace, name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional != nil && *optional {
				return nil
			}
			return fmt.Errorf("configmap %q: %w", name, err)
		}
		return projectKeys(files, keyData(obj, nil), items, m, optional != nil && *optional, fmt.Sprintf("configmap %q", name))
	}
	sec := func(name string, optional *bool, items []v1.KeyToPath, m int32) error {
		obj, err := objs.Secret(ctx, pod.Namespace, name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional != nil && *optional {
				return nil
			}
			return fmt.Errorf("secret %q: %w", name, err)
		}
		return projectKeys(files, keyData(nil, obj), items, m, optional != nil && *optional, fmt.Sprintf("secret %q", name))
	}
	down := func(items []v1.DownwardAPIVolumeFile, m int32) error {
		for _, it := range items {
			if it.FieldRef == nil {
				return fmt.Errorf("downwardAPI file %q: only fieldRef is supported", it.Path)
			}
			v, err := fieldValue(pod, it.FieldRef.FieldPath, podIP, hostIP)
			if err != nil {
				return fmt.Errorf("downwardAPI file %q: %w", it.Path, err)
			}
			fm := m
			if it.Mode != nil {
				fm = *it.Mode
			}
			files[it.Path] = volFile{[]byte(v), os.FileMode(fm)}
		}
		return nil
	}
	switch {
	case vol.ConfigMap != nil:
		err = cm(vol.ConfigMap.Name, vol.ConfigMap.Optional, vol.ConfigMap.Items, mode(vol.ConfigMap.DefaultMode))
	case vol.Secret != nil:
		err = sec(vol.Secret.SecretName, vol.Secret.Optional, vol.Secret.Items, mode(vol.Secret.DefaultMode))
	case vol.DownwardAPI != nil:
		err = down(vol.DownwardAPI.Items, mode(vol.DownwardAPI.DefaultMode))
	case vol.Projected != nil:
		m := mode(vol.Projected.DefaultMode)
		for _, src := range vol.Projected.Sources {
			switch {
			case src.ConfigMap != nil:
				err = cm(src.ConfigMap.Name, src.ConfigMap.Optional, src.ConfigMap.Items, m)
			case src.Secret != nil:
				err = sec(src.Secret.Name, src.Secret.Optional, src.Secret.Items, m)
			case src.DownwardAPI != nil:
				err = down(src.DownwardAPI.Items, m)
			case src.ServiceAccountToken != nil:
				ts, ok := objs.(tokenSource)
				if !ok {
					unsupported = append(unsupported, vol.Name)
					break
				}
				var tok []byte
				if tok, err = ts.PodToken(ctx, pod, vol.Name, src.ServiceAccountToken, os.FileMode(m)); err == nil {
					files[src.ServiceAccountToken.Path] = volFile{tok, os.FileMode(m)}
				}
			default:
				unsupported = append(unsupported, vol.Name)
			}
			if err != nil {
				break
			}
		}
	}
	return files, unsupported, err
}

// writeVolumeFiles writes files into dir once; a later call leaves an already written
// volume alone (contents are not refreshed while the pod runs).
func writeVolumeFiles(dir string, files map[string]volFile) error {
	marker := filepath.Join(dir, ".wasmkube-written")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if filepath.IsAbs(n) || strings.Contains(n, "..") {
			return fmt.Errorf("file path %q must be relative without '..'", n)
		}
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f := files[n]
		if err := os.WriteFile(p, f.data, f.mode.Perm()); err != nil {
			return err
		}
		_ = os.Chmod(p, f.mode.Perm())
	}
	return os.WriteFile(marker, nil, 0o600)
}

// envFromObjects resolves configMapKeyRef / secretKeyRef values.
func envRef(ctx context.Context, pod *v1.Pod, src *v1.EnvVarSource, objs Objects) (string, bool, error) {
	switch {
	case src.ConfigMapKeyRef != nil:
		r := src.ConfigMapKeyRef
		cm, err := objs.ConfigMap(ctx, pod.Namespace, r.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && r.Optional != nil && *r.Optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("configmap %q: %w", r.Name, err)
		}
		v, ok := keyData(cm, nil)[r.Key]
		if !ok && (r.Optional == nil || !*r.Optional) {
			return "", false, fmt.Errorf("configmap %q has no key %q", r.Name, r.Key)
		}
		return string(v), ok, nil
	case src.SecretKeyRef != nil:
		r := src.SecretKeyRef
		s, err := objs.Secret(ctx, pod.Namespace, r.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && r.Optional != nil && *r.Optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secret %q: %w", r.Name, err)
		}
		v, ok := keyData(nil, s)[r.Key]
		if !ok && (r.Optional == nil || !*r.Optional) {
			return "", false, fmt.Errorf("secret %q has no key %q", r.Name, r.Key)
		}
		return string(v), ok, nil
	}
	return "", false, fmt.Errorf("unsupported value source")
}
