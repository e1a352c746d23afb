package kubelet_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/internal/volumes"
	"github.com/wasmkube/wasmkube/kubelet"
)

// claimObjects answers the kubelet's reads of claims and volumes from maps.
type claimObjects struct {
	claims map[string]*v1.PersistentVolumeClaim // by namespace/name
	pvs    map[string]*v1.PersistentVolume
}

func (o *claimObjects) ConfigMap(context.Context, string, string) (*v1.ConfigMap, error) {
	return nil, errors.New("no configmaps here")
}

func (o *claimObjects) Secret(context.Context, string, string) (*v1.Secret, error) {
	return nil, errors.New("no secrets here")
}

func (o *claimObjects) Claim(_ context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	if c := o.claims[ns+"/"+name]; c != nil {
		return c.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
}

func (o *claimObjects) Volume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	if pv := o.pvs[name]; pv != nil {
		return pv.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
}

// VolumePaths resolves a persistentVolumeClaim volume to its bound volume's directory on
// this node and refuses, naming the pod, the field and the objects, every claim it cannot
// mount: missing, unbound, being deleted, bound to a volume whose claimRef is another
// claim, a volume of another node, of a type the kubelet cannot mount, or whose directory
// is gone.
func TestClaimVolumePaths(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "storage", "pvc-1_default_data")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	claim := func(name, volume string, phase v1.PersistentVolumeClaimPhase) *v1.PersistentVolumeClaim {
		return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: v1.PersistentVolumeClaimSpec{VolumeName: volume}, Status: v1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	localPV := func(name, claimName, node, path string) *v1.PersistentVolume {
		return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{volumes.NodeLabel: node}},
			Spec: v1.PersistentVolumeSpec{
				ClaimRef:               &v1.ObjectReference{Namespace: "default", Name: claimName, UID: types.UID("uid-" + claimName)},
				PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}}}}
	}
	deleting := claim("deleting", "pv-1", v1.ClaimBound)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	nfs := localPV("pv-nfs", "nfs", "node-a", "")
	nfs.Spec.Local = nil
	nfs.Spec.NFS = &v1.NFSVolumeSource{Server: "10.0.0.1", Path: "/export"}
	hostFile := filepath.Join(root, "host-file")
	if err := os.WriteFile(hostFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	hp := localPV("pv-host", "host", "", "")
	hp.Spec.Local = nil
	hp.Spec.HostPath = &v1.HostPathVolumeSource{Path: hostFile}
	objs := &claimObjects{
		claims: map[string]*v1.PersistentVolumeClaim{
			"default/data":     claim("data", "pv-1", v1.ClaimBound),
			"default/pending":  claim("pending", "", v1.ClaimPending),
			"default/deleting": deleting,
			"default/stolen":   claim("stolen", "pv-1", v1.ClaimBound),
			"default/far":      claim("far", "pv-far", v1.ClaimBound),
			"default/nfs":      claim("nfs", "pv-nfs", v1.ClaimBound),
			"default/gone":     claim("gone", "pv-gone", v1.ClaimBound),
			"default/nodir":    claim("nodir", "pv-nodir", v1.ClaimBound),
			"default/host":     claim("host", "pv-host", v1.ClaimBound),
		},
		pvs: map[string]*v1.PersistentVolume{
			"pv-1":     localPV("pv-1", "data", "node-a", dir),
			"pv-far":   localPV("pv-far", "far", "node-b", dir),
			"pv-nfs":   nfs,
			"pv-nodir": localPV("pv-nodir", "nodir", "node-a", filepath.Join(root, "storage", "removed")),
			"pv-host":  hp,
		},
	}
	pod := func(claims ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "default", UID: "pod-uid"}, Spec: v1.PodSpec{NodeName: "node-a"}}
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
		for i, c := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "v" + string(rune('0'+i)),
				VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
		}
		return p
	}

	paths, unsupported, err := kubelet.VolumePaths(ctx, pod("data", "host"), root, objs, "10.42.0.5", "10.0.0.1")
	if err != nil || len(unsupported) != 0 {
		t.Fatalf("VolumePaths: %v %v", err, unsupported)
	}
	if paths["v0"] != dir || paths["v1"] != hostFile {
		t.Fatalf("claim paths %v, want v0=%s v1=%s", paths, dir, hostFile)
	}
	if paths["scratch"] == "" || paths["scratch"] == dir {
		t.Fatalf("emptyDir path %q", paths["scratch"])
	}
	// The mount into a container is a read-write bind mount of that directory.
	ctr := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "v0", MountPath: "/data"}, {Name: "v0", MountPath: "/sub", SubPath: "logs"}}}
	ms, err := kubelet.ContainerMounts(pod("data"), ctr, "spec.containers[0]", paths)
	if err != nil || len(ms) != 2 || ms[0].HostPath != dir || ms[0].ContainerPath != "/data" || ms[0].ReadOnly || ms[1].HostPath != filepath.Join(dir, "logs") {
		t.Fatalf("ContainerMounts: %+v %v", ms, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "logs")); err != nil || !fi.IsDir() {
		t.Fatalf("subPath directory in the claim's volume: %v", err)
	}
	// persistentVolumeClaim.readOnly makes every mount of the volume read-only.
	ro := pod("data")
	ro.Spec.Volumes[1].PersistentVolumeClaim.ReadOnly = true
	if ms, err := kubelet.ContainerMounts(ro, ctr, "spec.containers[0]", paths); err != nil || len(ms) != 2 || !ms[0].ReadOnly || !ms[1].ReadOnly {
		t.Fatalf("ContainerMounts of a readOnly claim: %+v %v", ms, err)
	}

	for _, tc := range []struct{ claim, want string }{
		{"missing", `persistentvolumeclaim "missing": persistentvolumeclaims "missing" not found`},
		{"pending", `persistentvolumeclaim "pending" is not bound yet (phase Pending)`},
		{"deleting", `persistentvolumeclaim "deleting" is being deleted`},
		{"stolen", `persistentvolume "pv-1" of claim "stolen": spec.claimRef does not name this claim`},
		{"far", `persistentvolume "pv-far" of claim "far" is on node node-b, not node-a`},
		{"nfs", `persistentvolume "pv-nfs" of claim "nfs": wasmkube's kubelet mounts only local and hostPath volumes`},
		{"gone", `persistentvolume "pv-gone" of claim "gone": persistentvolumes "pv-gone" not found`},
		{"nodir", `persistentvolume "pv-nodir" of claim "nodir": ` + filepath.Join(root, "storage", "removed")},
		{"", "claimName is empty"},
	} {
		_, _, err := kubelet.VolumePaths(ctx, pod("data", tc.claim), root, objs, "", "")
		var ce *kubelet.ConfigError
		if !errors.As(err, &ce) || ce.Pod != "default/db-0" || ce.Field != "spec.volumes[2].persistentVolumeClaim" || !strings.Contains(ce.Msg, tc.want) {
			t.Errorf("claim %q: err = %v, want a ConfigError on spec.volumes[2].persistentVolumeClaim with %q", tc.claim, err, tc.want)
		}
	}
	// Without API access to claims (objects that answer only configmaps and secrets) the
	// claim is refused, not mounted empty.
	if _, _, err := kubelet.VolumePaths(ctx, pod("data"), root, onlyConfig{}, "", ""); err == nil || !strings.Contains(err.Error(), `no API access to read claim "data"`) {
		t.Errorf("without claim access: %v", err)
	}
}

type onlyConfig struct{}

func (onlyConfig) ConfigMap(context.Context, string, string) (*v1.ConfigMap, error) {
	return nil, errors.New("none")
}
func (onlyConfig) Secret(context.Context, string, string) (*v1.Secret, error) {
	return nil, errors.New("none")
}
