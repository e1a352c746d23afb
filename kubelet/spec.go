package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// Restart back-off: 10 s doubling to 5 min, as in Kubernetes.
const (
	backoffBase = 10 * time.Second
	backoffMax  = 5 * time.Minute
)

// RestartDelay is how long after a container's exit its next attempt may start. attempt is
// the restart count of the container that exited: the first restart is immediate, then
// 10 s, 20 s, 40 s ... up to 5 min (CrashLoopBackOff in between).
func RestartDelay(attempt int) time.Duration {
	if attempt <= 0 {
		return 0
	}
	d := backoffBase
	for i := 1; i < attempt; i++ {
		d *= 2
		if d >= backoffMax {
			return backoffMax
		}
	}
	return d
}

// ShouldRestart applies the pod's restartPolicy to a container that exited with code.
func ShouldRestart(policy v1.RestartPolicy, code int32) bool {
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return code != 0
	}
	return true
}

// LogPath is where attempt of a container writes its output.
func LogPath(rootDir, podUID, container string, attempt int) string {
	return filepath.Join(rootDir, "pods", podUID, container, strconv.Itoa(attempt)+".log")
}

// PodDir is the pod's directory under the kubelet root: volumes and logs.
func PodDir(rootDir, podUID string) string { return filepath.Join(rootDir, "pods", podUID) }

// ConfigError is an error in a pod's spec that the kubelet cannot run
// (CreateContainerConfigError).
type ConfigError struct {
	Pod, Field, Msg string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("pod %s: %s: %s", e.Pod, e.Field, e.Msg) }

// VolumePaths resolves the host path of each of the pod's volumes. emptyDir lives under the
// pod's directory; hostPath is used as is (created for the *OrCreate types); configMap,
// secret, downwardAPI and projected volumes are written under the pod's directory once, from
// objs. Other volume types (and projected serviceAccountToken sources) get an empty
// directory, and their names are returned in unsupported so the caller can warn.
func VolumePaths(ctx context.Context, pod *v1.Pod, rootDir string, objs Objects, podIP, hostIP string) (paths map[string]string, unsupported []string, err error) {
	paths = map[string]string{}
	podName := pod.Namespace + "/" + pod.Name
	for i, v := range pod.Spec.Volumes {
		field := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case v.HostPath != nil:
			p := v.HostPath.Path
			if !filepath.IsAbs(p) {
				return nil, nil, &ConfigError{podName, field + ".hostPath.path", fmt.Sprintf("%q is not absolute", p)}
			}
			t := v1.HostPathUnset
			if v.HostPath.Type != nil {
				t = *v.HostPath.Type
			}
			switch t {
			case v1.HostPathDirectoryOrCreate:
				if err := os.MkdirAll(p, 0o755); err != nil {
					return nil, nil, &ConfigError{podName, field + ".hostPath", err.Error()}
				}
			case v1.HostPathFileOrCreate:
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return nil, nil, &ConfigError{podName, field + ".hostPath", err.Error()}
				}
				f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o644)
				if err != nil {
					return nil, nil, &ConfigError{podName, field + ".hostPath", err.Error()}
				}
				f.Close()
			case v1.HostPathDirectory, v1.HostPathFile:
				fi, err := os.Stat(p)
				if err != nil || fi.IsDir() != (t == v1.HostPathDirectory) {
					return nil, nil, &ConfigError{podName, field + ".hostPath", fmt.Sprintf("%s is not an existing %s", p, strings.ToLower(string(t)))}
				}
			}
			paths[v.Name] = p
		case v.PersistentVolumeClaim != nil: // volumes.go
			p, err := claimPath(ctx, pod, v.PersistentVolumeClaim, objs, "")
			if err != nil {
				return nil, nil, &ConfigError{podName, field + ".persistentVolumeClaim", err.Error()}
			}
			paths[v.Name] = p
		default:
			dir := filepath.Join(PodDir(rootDir, string(pod.UID)), "volumes", v.Name)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, nil, &ConfigError{podName, field, err.Error()}
			}
			switch {
			case v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumMemory:
				if err := mountTmpfs(dir, v.EmptyDir.SizeLimit); err != nil {
					return nil, nil, &ConfigError{podName, field + ".emptyDir", err.Error()}
				}
			case v.EmptyDir != nil:
				_ = os.Chmod(dir, 0o777) // emptyDir is world-writable, as in Kubernetes
			case v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil:
				if _, err := os.Stat(filepath.Join(dir, ".wasmkube-written")); err == nil {
					break
				}
				if objs == nil {
					return nil, nil, &ConfigError{podName, field, "no API access to read the volume's objects"}
				}
				files, unsup, err := VolumeFiles(ctx, pod, &v, objs, podIP, hostIP)
				if err != nil {
					return nil, nil, &ConfigError{podName, field, err.Error()}
				}
				unsupported = append(unsupported, unsup...)
				if err := writeVolumeFiles(dir, files); err != nil {
					return nil, nil, &ConfigError{podName, field, err.Error()}
				}
			default:
				unsupported = append(unsupported, v.Name)
			}
			paths[v.Name] = dir
		}
	}
	return paths, unsupported, nil
}

// ContainerMounts turns a container's volumeMounts into bind mounts.
func ContainerMounts(pod *v1.Pod, c *v1.Container, field string, volumes map[string]string) ([]runtime.Mount, error) {
	var ms []runtime.Mount
	for i, vm := range c.VolumeMounts {
		host, ok := volumes[vm.Name]
		if !ok {
			return nil, &ConfigError{pod.Namespace + "/" + pod.Name, fmt.Sprintf("%s.volumeMounts[%d].name", field, i), fmt.Sprintf("no volume named %q", vm.Name)}
		}
		if vm.SubPath != "" {
			if filepath.IsAbs(vm.SubPath) || strings.Contains(vm.SubPath, "..") {
				return nil, &ConfigError{pod.Namespace + "/" + pod.Name, fmt.Sprintf("%s.volumeMounts[%d].subPath", field, i), "must be a relative path without '..'"}
			}
			host = filepath.Join(host, vm.SubPath)
			if err := os.MkdirAll(host, 0o777); err != nil {
				return nil, err
			}
		}
		ms = append(ms, runtime.Mount{HostPath: host, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly || claimReadOnly(pod, vm.Name)})
	}
	return ms, nil
}

// ContainerEnv resolves a container's environment: envFrom (configMapRef, secretRef), then
// env with literal values, configMapKeyRef, secretKeyRef and the downward API field
// references kubelets answer (pod name, namespace, uid, IPs, node name, labels and
// annotations, service account). Later entries win, as in Kubernetes.
func ContainerEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, field, podIP, hostIP string, objs Objects) ([]string, error) {
	podName := pod.Namespace + "/" + pod.Name
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for i, ef := range c.EnvFrom {
		f := fmt.Sprintf("%s.envFrom[%d]", field, i)
		if objs == nil {
			return nil, &ConfigError{podName, f, "no API access to read the referenced object"}
		}
		var data map[string][]byte
		switch {
		case ef.ConfigMapRef != nil:
			cm, err := objs.ConfigMap(ctx, pod.Namespace, ef.ConfigMapRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ef.ConfigMapRef.Optional != nil && *ef.ConfigMapRef.Optional {
					continue
				}
				return nil, &ConfigError{podName, f + ".configMapRef", err.Error()}
			}
			data = keyData(cm, nil)
		case ef.SecretRef != nil:
			s, err := objs.Secret(ctx, pod.Namespace, ef.SecretRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ef.SecretRef.Optional != nil && *ef.SecretRef.Optional {
					continue
				}
				return nil, &ConfigError{podName, f + ".secretRef", err.Error()}
			}
			data = keyData(nil, s)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(ef.Prefix+k, string(data[k]))
		}
	}
	for i, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, e.Value)
			continue
		}
		f := fmt.Sprintf("%s.env[%d].valueFrom", field, i)
		switch {
		case e.ValueFrom.FieldRef != nil:
			v, err := fieldValue(pod, e.ValueFrom.FieldRef.FieldPath, podIP, hostIP)
			if err != nil {
				return nil, &ConfigError{podName, f + ".fieldRef.fieldPath", err.Error()}
			}
			set(e.Name, v)
		case (e.ValueFrom.ConfigMapKeyRef != nil || e.ValueFrom.SecretKeyRef != nil) && objs != nil:
			v, ok, err := envRef(ctx, pod, e.ValueFrom, objs)
			if err != nil {
				return nil, &ConfigError{podName, f, err.Error()}
			}
			if ok {
				set(e.Name, v)
			}
		default:
			return nil, &ConfigError{podName, f, "only fieldRef, configMapKeyRef and secretKeyRef are supported by wasmkube's kubelet"}
		}
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, nil
}

func fieldValue(pod *v1.Pod, path, podIP, hostIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if strings.HasPrefix(path, prefix+"['") && strings.HasSuffix(path, "']") {
			return m[strings.TrimSuffix(strings.TrimPrefix(path, prefix+"['"), "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported field %q", path)
}

// ContainerResources maps requests and limits to cgroup settings: memory limit, CFS quota
// over a 100 ms period from the cpu limit, and cpu shares from the cpu request (1024 per
// core, at least 2), as the Kubernetes kubelet does.
func ContainerResources(c *v1.Container) runtime.Resources {
	var r runtime.Resources
	if m, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitBytes = m.Value()
	}
	if cpu, ok := c.Resources.Limits[v1.ResourceCPU]; ok && cpu.MilliValue() > 0 {
		r.CPUPeriod = 100000
		r.CPUQuota = cpu.MilliValue() * 100000 / 1000
		if r.CPUQuota < 1000 {
			r.CPUQuota = 1000
		}
	}
	req, ok := c.Resources.Requests[v1.ResourceCPU]
	if !ok {
		req, ok = c.Resources.Limits[v1.ResourceCPU]
	}
	if ok {
		r.CPUShares = uint64(req.MilliValue() * 1024 / 1000)
		if r.CPUShares < 2 {
			r.CPUShares = 2
		}
	}
	return r
}

// ContainerSecurity resolves a container's security context over the pod's: runAsUser and
// runAsGroup from the container if set, else from the pod; privileged, readOnlyRootFilesystem,
// allowPrivilegeEscalation=false (no_new_privs) and capabilities from the container.
func ContainerSecurity(pod *v1.Pod, c *v1.Container) runtime.Security {
	var s runtime.Security
	if psc := pod.Spec.SecurityContext; psc != nil {
		s.RunAsUser, s.RunAsGroup = psc.RunAsUser, psc.RunAsGroup
	}
	sc := c.SecurityContext
	if sc == nil {
		return s
	}
	if sc.RunAsUser != nil {
		s.RunAsUser = sc.RunAsUser
	}
	if sc.RunAsGroup != nil {
		s.RunAsGroup = sc.RunAsGroup
	}
	s.Privileged = sc.Privileged != nil && *sc.Privileged
	s.ReadOnlyRootFS = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	s.NoNewPrivileges = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	if sc.Capabilities != nil {
		for _, c := range sc.Capabilities.Add {
			s.AddCaps = append(s.AddCaps, string(c))
		}
		for _, c := range sc.Capabilities.Drop {
			s.DropCaps = append(s.DropCaps, string(c))
		}
	}
	return s
}

// mountTmpfs mounts a tmpfs on dir unless one is there already; its size is the sizeLimit,
// or the kernel's default (half of RAM) without one.
func mountTmpfs(dir string, size *resource.Quantity) error {
	if isMountPoint(dir) {
		return nil
	}
	opts := "mode=1777"
	if size != nil && size.Value() > 0 {
		opts += fmt.Sprintf(",size=%d", size.Value())
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

func mountPointsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var mps []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			mps = append(mps, f[4])
		}
	}
	return mps
}

func isMountPoint(dir string) bool {
	for _, m := range mountPointsUnder(dir) {
		if m == dir {
			return true
		}
	}
	return false
}

// RemovePodDir unmounts what the kubelet mounted under the pod's directory (memory-backed
// emptyDirs), then deletes it: volumes, logs, everything.
func RemovePodDir(rootDir, podUID string) error {
	dir := PodDir(rootDir, podUID)
	mps := mountPointsUnder(dir)
	sort.Sort(sort.Reverse(sort.StringSlice(mps)))
	for _, m := range mps {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", m, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove pod dir: %w", err)
	}
	return nil
}

// TerminationLogPath is the host file bind-mounted at a container attempt's
// terminationMessagePath.
func TerminationLogPath(rootDir, podUID, container string, attempt int) string {
	return filepath.Join(rootDir, "pods", podUID, container, strconv.Itoa(attempt)+".termination-log")
}

// maxTerminationMessage bounds a termination message, as Kubernetes does (4 KiB per container).
const maxTerminationMessage = 4096

// TerminationMessage reads what an exited container left at its terminationMessagePath; with
// policy FallbackToLogsOnError and nothing written after a failure, the tail of its log.
func TerminationMessage(c *v1.Container, termLog, logPath string, exitCode int32) string {
	b, _ := os.ReadFile(termLog)
	if len(b) > maxTerminationMessage {
		b = b[:maxTerminationMessage]
	}
	if len(b) == 0 && exitCode != 0 && c != nil && c.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError {
		b = logTail(logPath, 80, 2048)
	}
	return string(b)
}
