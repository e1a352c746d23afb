package controller_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/internal/volumes"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
	"github.com/wasmkube/wasmkube/kubelet/localpath"
)

const dataManifest = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: c
        image: busybox:1
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// TestVolumeClaimTemplatesOnLocalPath: a StatefulSet's claims are created before its
// pods, placed by the scheduler (WaitForFirstConsumer), provisioned by the local-path
// provisioner of the pod's node and bound by the PV controller; a replaced pod goes back
// to its volume's node and claim; the claim outlives the pod and is protected while a
// pod uses it; deleting it releases the volume, which the provisioner deletes (Delete).
// The provisioners run here for the hollow nodes as they run inside real kubelets.
func TestVolumeClaimTemplatesOnLocalPath(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 3, ctrl: ctrlOpts()})
	root := t.TempDir()
	for i := 0; i < 3; i++ {
		name := hollow.NodeName("hollow-", i)
		p := localpath.New(e.client, name, filepath.Join(root, name), testLogger())
		e.wg.Add(1)
		go func() { defer e.wg.Done(); p.Run(e.ctx) }()
	}
	kubectl := kubectlFor(t, e)
	if out := kubectl("get", "storageclass", "--no-headers"); !strings.Contains(out, "local-path (default)") || !strings.Contains(out, "wasmkube.io/local-path") ||
		!strings.Contains(out, "WaitForFirstConsumer") || !strings.Contains(out, "Delete") {
		t.Fatalf("kubectl get storageclass: %q", out)
	}
	manifest := filepath.Join(t.TempDir(), "db.yaml")
	if err := os.WriteFile(manifest, []byte(dataManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl("apply", "-f", manifest)
	deadline := time.Now().Add(waitTimeout)
	for {
		ss, err := e.client.AppsV1().StatefulSets("default").Get(e.ctx, "db", metav1.GetOptions{})
		if err == nil && ss.Status.ReadyReplicas == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("statefulset db not ready: %v\n%s\n%s", err, kubectl("get", "pods,pvc,pv", "-o", "wide"),
				kubectl("get", "events", "-A", "--sort-by=.lastTimestamp"))
		}
		time.Sleep(200 * time.Millisecond)
	}

	nodeOf := map[string]string{}
	for _, pod := range []string{"db-0", "db-1"} {
		claim := "data-" + pod
		var pvc *corev1.PersistentVolumeClaim
		e.eventually(claim+" bound", func() (bool, error) {
			var err error
			pvc, err = e.client.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, claim, metav1.GetOptions{})
			return err == nil && pvc.Status.Phase == corev1.ClaimBound, err
		})
		p, err := e.client.CoreV1().Pods("default").Get(e.ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Annotations[volumes.AnnSelectedNode] != p.Spec.NodeName || pv.Labels[volumes.NodeLabel] != p.Spec.NodeName ||
			pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID || pv.Status.Phase != corev1.VolumeBound ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "local-path" {
			t.Fatalf("claim %s (annotations %v) and volume %s (labels %v, claimRef %v, phase %s, reclaim %s) do not match pod on %s",
				claim, pvc.Annotations, pv.Name, pv.Labels, pv.Spec.ClaimRef, pv.Status.Phase, pv.Spec.PersistentVolumeReclaimPolicy, p.Spec.NodeName)
		}
		if fi, err := os.Stat(pv.Spec.Local.Path); err != nil || !fi.IsDir() || !strings.HasPrefix(pv.Spec.Local.Path, filepath.Join(root, p.Spec.NodeName, "storage")+"/") {
			t.Fatalf("volume %s: directory %s: %v", pv.Name, pv.Spec.Local.Path, err)
		}
		if !containsString(pvc.Finalizers, volumes.PVCProtectionFinalizer) {
			t.Errorf("claim %s finalizers %v", claim, pvc.Finalizers)
		}
		nodeOf[pod] = p.Spec.NodeName
	}
	if out := kubectl("get", "pvc", "data-db-0", "--no-headers"); !strings.Contains(out, "Bound") || !strings.Contains(out, "1Gi") || !strings.Contains(out, "RWO") {
		t.Errorf("kubectl get pvc: %q", out)
	}

	// The successor of db-0 goes where its volume is, with the same claim.
	old, _ := e.client.CoreV1().Pods("default").Get(e.ctx, "db-0", metav1.GetOptions{})
	kubectl("delete", "pod", "db-0", "--wait=false")
	e.eventually("db-0 replaced", func() (bool, error) {
		p, err := e.client.CoreV1().Pods("default").Get(e.ctx, "db-0", metav1.GetOptions{})
		return err == nil && p.UID != old.UID && p.Spec.NodeName != "", err
	})
	p, _ := e.client.CoreV1().Pods("default").Get(e.ctx, "db-0", metav1.GetOptions{})
	if p.Spec.NodeName != nodeOf["db-0"] {
		t.Fatalf("db-0's successor went to %s, its volume is on %s", p.Spec.NodeName, nodeOf["db-0"])
	}

	// The claim is protected while db-1 uses it; once the set is gone it goes, and its
	// volume (Delete) with its directory.
	pvc1, _ := e.client.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, "data-db-1", metav1.GetOptions{})
	pv1, _ := e.client.CoreV1().PersistentVolumes().Get(e.ctx, pvc1.Spec.VolumeName, metav1.GetOptions{})
	kubectl("delete", "pvc", "data-db-1", "--wait=false")
	got, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, "data-db-1", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("claim in use: %v, deletionTimestamp %v (want it kept, terminating)", err, got)
	}
	kubectl("delete", "statefulset", "db")
	e.eventually("claim data-db-1 deleted after its pod", func() (bool, error) {
		_, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, "data-db-1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	e.eventually("volume "+pv1.Name+" deleted", func() (bool, error) {
		_, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, pv1.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	if _, err := os.Stat(pv1.Spec.Local.Path); !os.IsNotExist(err) {
		t.Errorf("directory %s of the deleted volume: %v", pv1.Spec.Local.Path, err)
	}
	// data-db-0 outlives the set (retention Retain).
	if _, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(e.ctx, "data-db-0", metav1.GetOptions{}); err != nil {
		t.Errorf("claim data-db-0 after the set's deletion: %v", err)
	}
}
