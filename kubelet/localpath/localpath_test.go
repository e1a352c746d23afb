package localpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/internal/volumes"
)

// Provision makes a directory under <root>/storage and a local PV pinned to the node and
// pre-bound to the claim, only for a claim selected for this node and handed to
// wasmkube.io/local-path; reclaim removes a Released Delete volume's directory and object,
// keeps a Retain one, and never removes a directory outside its storage dir.
func TestProvisionAndReclaim(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	sc := volumes.DefaultStorageClass()
	retain := sc.DeepCopy()
	retain.Name, retain.ReclaimPolicy = "keep", ptr.To(corev1.PersistentVolumeReclaimRetain)
	claim := func(name, class, node, provisioner string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
				Annotations: map[string]string{volumes.AnnSelectedNode: node, volumes.AnnStorageProvisioner: provisioner}},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}},
		}
	}
	c := fake.NewSimpleClientset(sc, retain)
	p := New(c, "node-a", root, nil)

	// Not ours (yet): another node, no provisioner yet (requeue), another provisioner.
	for _, tc := range []struct {
		pvc     *corev1.PersistentVolumeClaim
		requeue bool
	}{
		{claim("elsewhere", "local-path", "node-b", volumes.Provisioner), false},
		{claim("waiting", "local-path", "node-a", ""), true},
		{claim("other", "local-path", "node-a", "example.com/nfs"), false},
	} {
		requeue, err := p.Provision(ctx, tc.pvc)
		if err != nil || requeue != tc.requeue {
			t.Errorf("claim %s: requeue %v err %v, want requeue %v", tc.pvc.Name, requeue, err, tc.requeue)
		}
	}
	if pvs, _ := c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); len(pvs.Items) != 0 {
		t.Fatalf("volumes made for claims not ours: %v", pvs.Items)
	}

	data, kept := claim("data", "local-path", "node-a", volumes.Provisioner), claim("kept", "keep", "node-a", volumes.Provisioner)
	for _, pvc := range []*corev1.PersistentVolumeClaim{data, kept} {
		if _, err := p.Provision(ctx, pvc); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Provision(ctx, pvc); err != nil { // again: idempotent
			t.Fatal(err)
		}
	}
	pv, err := c.CoreV1().PersistentVolumes().Get(ctx, volumes.PVName(data), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "storage", volumes.PVName(data)+"_default_data")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Fatalf("volume directory %s: %v %v", dir, fi, err)
	}
	if pv.Spec.Local == nil || pv.Spec.Local.Path != dir || pv.Labels[volumes.NodeLabel] != "node-a" ||
		pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != data.UID || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Annotations[volumes.AnnProvisionedBy] != volumes.Provisioner || pv.Spec.Capacity.Storage().String() != "2Gi" ||
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "node-a" {
		t.Fatalf("volume: %+v", pv)
	}
	keptPV, err := c.CoreV1().PersistentVolumes().Get(ctx, volumes.PVName(kept), metav1.GetOptions{})
	if err != nil || keptPV.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Fatalf("Retain class's volume: %v %v", keptPV, err)
	}

	// A Bound volume is left alone; Released with Delete loses directory and object;
	// Released with Retain keeps both.
	if err := p.reclaim(ctx, pv.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a volume not Released lost its directory: %v", err)
	}
	release := func(pv *corev1.PersistentVolume) {
		pv.Status.Phase = corev1.VolumeReleased
		if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	release(pv)
	release(keptPV)
	for _, name := range []string{pv.Name, keptPV.Name} {
		if err := p.reclaim(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Released Delete volume's directory: %v", err)
	}
	if _, err := c.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Released Delete volume object: %v", err)
	}
	if _, err := os.Stat(keptPV.Spec.Local.Path); err != nil {
		t.Fatalf("Retain volume's directory: %v", err)
	}
	if _, err := c.CoreV1().PersistentVolumes().Get(ctx, keptPV.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("Retain volume object: %v", err)
	}

	// A volume of ours whose path points outside storage/ is refused, and nothing is removed.
	outside := t.TempDir()
	evil := volumes.NewLocalPV(claim("evil", "local-path", "node-a", volumes.Provisioner), sc, "node-a", outside)
	evil.Status.Phase = corev1.VolumeReleased
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, evil, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.reclaim(ctx, evil.Name); err == nil || !strings.Contains(err.Error(), "is not under") {
		t.Fatalf("reclaim of a volume outside storage/: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("directory outside storage/ removed: %v", err)
	}
}
