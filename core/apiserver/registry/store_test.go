package registry

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func storeFor(resource string) *Store {
	for _, r := range Builtin() {
		if r.GVR.Resource == resource {
			return &Store{Resource: r}
		}
	}
	panic(resource)
}

func i64(v int64) *int64 { return &v }

func TestDecideDeletion(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	orphan := metav1.DeletePropagationOrphan
	pod := func(node string, phase corev1.PodPhase, fin ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Finalizers: fin},
			Spec:   corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: i64(20)},
			Status: corev1.PodStatus{Phase: phase}}
	}
	cases := []struct {
		name      string
		res       string
		obj       runtime.Object
		opts      metav1.DeleteOptions
		now       bool
		grace     *int64
		finalizer []string
		wantErr   func(error) bool
	}{
		{name: "unbound pod goes at once", res: "pods", obj: pod("", corev1.PodPending), now: true},
		{name: "bound pod waits its grace period", res: "pods", obj: pod("n1", corev1.PodRunning), grace: i64(20)},
		{name: "request grace wins", res: "pods", obj: pod("n1", corev1.PodRunning), opts: metav1.DeleteOptions{GracePeriodSeconds: i64(3)}, grace: i64(3)},
		{name: "grace 0 on a bound pod", res: "pods", obj: pod("n1", corev1.PodRunning), opts: metav1.DeleteOptions{GracePeriodSeconds: i64(0)}, now: true},
		{name: "finished pod goes at once", res: "pods", obj: pod("n1", corev1.PodSucceeded), now: true},
		{name: "finalizer holds an unbound pod", res: "pods", obj: pod("", corev1.PodPending, "x"), grace: i64(0), finalizer: []string{"x"}},
		{name: "configmap goes at once", res: "configmaps", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, now: true},
		{name: "orphan policy adds the finalizer", res: "replicasets", obj: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "r"}},
			opts: metav1.DeleteOptions{PropagationPolicy: &orphan}, grace: i64(0), finalizer: []string{"orphan"}},
		{name: "legacy orphanDependents", res: "replicasets", obj: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "r"}},
			opts: metav1.DeleteOptions{OrphanDependents: func() *bool { b := true; return &b }()}, grace: i64(0), finalizer: []string{"orphan"}},
		{name: "namespace terminates", res: "namespaces", obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}}, grace: i64(0)},
		{name: "kube-system is protected", res: "namespaces", obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}, wantErr: apierrors.IsForbidden},
		{name: "bad propagation policy", res: "configmaps", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
			opts: metav1.DeleteOptions{PropagationPolicy: func() *metav1.DeletionPropagation { p := metav1.DeletionPropagation("Sideways"); return &p }()}, wantErr: apierrors.IsInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.obj.DeepCopyObject()
			d, err := storeFor(c.res).decideDeletion(c.obj, &c.opts, now)
			if c.wantErr != nil {
				if !c.wantErr(err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalObjects(before, c.obj) {
				t.Fatal("decideDeletion modified its input")
			}
			if d.now != c.now {
				t.Fatalf("now = %v, want %v", d.now, c.now)
			}
			if c.now {
				return
			}
			m := ObjMeta(d.updated)
			if m.GetDeletionTimestamp() == nil {
				t.Fatal("no deletionTimestamp")
			}
			if g := m.GetDeletionGracePeriodSeconds(); g == nil || *g != *c.grace {
				t.Fatalf("grace = %v, want %d", g, *c.grace)
			}
			if want := now.Add(time.Duration(*c.grace) * time.Second); !m.GetDeletionTimestamp().Time.Equal(want) {
				t.Fatalf("deletionTimestamp = %v, want %v", m.GetDeletionTimestamp(), want)
			}
			if c.finalizer != nil && (len(m.GetFinalizers()) != len(c.finalizer) || m.GetFinalizers()[0] != c.finalizer[0]) {
				t.Fatalf("finalizers = %v, want %v", m.GetFinalizers(), c.finalizer)
			}
			if ns, ok := d.updated.(*corev1.Namespace); ok && ns.Status.Phase != corev1.NamespaceTerminating {
				t.Fatalf("namespace phase %q", ns.Status.Phase)
			}
		})
	}
}

func equalObjects(a, b runtime.Object) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

func TestMergeUpdate(t *testing.T) {
	st := storeFor("deployments")
	cur := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", UID: "u1", ResourceVersion: "7", Generation: 3},
		Spec: appsv1.DeploymentSpec{Replicas: func() *int32 { n := int32(1); return &n }()}, Status: appsv1.DeploymentStatus{Replicas: 1}}

	in := cur.DeepCopy()
	in.Generation, in.Status.Replicas = 99, 42
	out, err := st.mergeUpdate(cur, in, updateMain)
	if err != nil {
		t.Fatal(err)
	}
	d := out.(*appsv1.Deployment)
	if d.UID != "u1" || d.Generation != 3 || d.Status.Replicas != 1 {
		t.Fatalf("main update changed server-owned fields: uid %s gen %d status %d", d.UID, d.Generation, d.Status.Replicas)
	}
	in = cur.DeepCopy()
	in.UID = ""
	if out, err := st.mergeUpdate(cur, in, updateMain); err != nil || ObjMeta(out).GetUID() != "u1" {
		t.Fatalf("update without uid: %v", err)
	}
	in = cur.DeepCopy()
	*in.Spec.Replicas = 5
	out, _ = st.mergeUpdate(cur, in, updateMain)
	if out.(*appsv1.Deployment).Generation != 4 {
		t.Fatalf("spec change: generation %d, want 4", out.(*appsv1.Deployment).Generation)
	}
	in = cur.DeepCopy()
	*in.Spec.Replicas, in.Status.Replicas = 9, 2
	out, _ = st.mergeUpdate(cur, in, updateStatus)
	d = out.(*appsv1.Deployment)
	if *d.Spec.Replicas != 1 || d.Status.Replicas != 2 || d.Generation != 3 {
		t.Fatalf("status update: spec %d status %d gen %d", *d.Spec.Replicas, d.Status.Replicas, d.Generation)
	}
	in = cur.DeepCopy()
	in.ResourceVersion = "6"
	if _, err := st.mergeUpdate(cur, in, updateMain); !apierrors.IsConflict(err) {
		t.Fatalf("stale resourceVersion: %v", err)
	}
	in = cur.DeepCopy()
	in.UID = "other"
	if _, err := st.mergeUpdate(cur, in, updateStatus); !apierrors.IsConflict(err) {
		t.Fatalf("uid precondition: %v", err)
	}
	if *cur.Spec.Replicas != 1 || cur.Status.Replicas != 1 {
		t.Fatal("mergeUpdate modified the current object")
	}
}

// A watch is filed in the pods' watch index only under the exact spec.nodeName its field
// selector requires; other selectors, and other resources, stay unindexed.
func TestWatchIndexValue(t *testing.T) {
	pods, nodes := storeFor("pods"), storeFor("nodes")
	for _, c := range []struct {
		st        *Store
		sel, want string
	}{
		{pods, "spec.nodeName=n1", "n1"},
		{pods, "status.phase!=Succeeded,spec.nodeName=n1", "n1"},
		{pods, "spec.nodeName!=n1", ""},
		{pods, "spec.nodeName=", ""},
		{pods, "status.phase=Running", ""},
		{pods, "", ""},
		{nodes, "metadata.name=n1", ""},
	} {
		if got := c.st.IndexValue(c.sel); got != c.want {
			t.Errorf("%s with fieldSelector %q: index value %q, want %q", c.st.Resource.GVR.Resource, c.sel, got, c.want)
		}
	}
}
