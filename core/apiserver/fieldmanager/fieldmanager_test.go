package fieldmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

var (
	deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
	podKind        = corev1.SchemeGroupVersion.WithKind("Pod")
)

func newManager(t testing.TB, r Resource) *Manager {
	t.Helper()
	m, err := New(r)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func deployments(t testing.TB) *Manager {
	return newManager(t, Resource{Kind: deploymentKind, Subresources: []string{"status"}, ResetFields: DefaultResetFields(true)})
}

// applyYAML applies body as manager and returns the new live object.
func applyYAML(t *testing.T, m *Manager, live runtime.Object, manager, body string, force bool) (runtime.Object, error) {
	t.Helper()
	out, _, err := m.Apply(live.DeepCopyObject(), []byte(body), ApplyOptions{Manager: manager, Force: force})
	return out, err
}

func mustApply(t *testing.T, m *Manager, live runtime.Object, manager, body string) runtime.Object {
	t.Helper()
	out, err := applyYAML(t, m, live, manager, body, false)
	if err != nil {
		t.Fatalf("apply by %s: %v", manager, err)
	}
	return out
}

// owners returns the managers owning path (dotted, as fieldpath prints it) in obj.
func owners(t *testing.T, obj runtime.Object, path string) []string {
	t.Helper()
	var out []string
	for _, e := range managedOf(obj) {
		set := &fieldpath.Set{}
		if err := set.FromJSON(strings.NewReader(string(e.FieldsV1.Raw))); err != nil {
			t.Fatal(err)
		}
		set.Iterate(func(p fieldpath.Path) {
			if p.String() == path {
				out = append(out, e.Manager)
			}
		})
	}
	sort.Strings(out)
	return out
}

func replicas(obj runtime.Object) *int32 {
	return obj.(*appsv1.Deployment).Spec.Replicas
}

const deployBase = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
`

func withReplicas(n string) string {
	return strings.Replace(deployBase, "spec:\n  selector", "spec:\n  replicas: "+n+"\n  selector", 1)
}

func replicasOnly(n string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: " + n + "\n"
}

// TestConflicts is upstream's table for two appliers of one field: a different value is a
// 409 naming the other manager and the field, the same value is shared ownership, force
// takes the field, and a field stays until its last owner stops applying it.
func TestConflicts(t *testing.T) {
	m := deployments(t)
	live := mustApply(t, m, m.New(), "alice", withReplicas("1"))
	if r := replicas(live); r == nil || *r != 1 {
		t.Fatalf("replicas after create by apply: %v", r)
	}

	// A different value: 409 with upstream's Status (reason Conflict, a cause per field).
	_, err := applyYAML(t, m, live, "bob", replicasOnly("2"), false)
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusConflict || se.ErrStatus.Reason != metav1.StatusReasonConflict {
		t.Fatalf("conflicting apply: want a 409 Conflict, got %v", err)
	}
	causes := se.ErrStatus.Details.Causes
	if len(causes) != 1 || causes[0].Field != ".spec.replicas" || causes[0].Type != metav1.CauseTypeFieldManagerConflict ||
		!strings.Contains(causes[0].Message, `"alice"`) {
		t.Fatalf("conflict causes: %+v", causes)
	}
	if !strings.Contains(se.ErrStatus.Message, `conflict with "alice": .spec.replicas`) {
		t.Fatalf("conflict message: %q", se.ErrStatus.Message)
	}

	// The same value: no conflict, both own it.
	live = mustApply(t, m, live, "bob", replicasOnly("1"))
	if got := owners(t, live, ".spec.replicas"); strings.Join(got, ",") != "alice,bob" {
		t.Fatalf("owners of .spec.replicas after a shared apply: %v", got)
	}

	// alice stops applying replicas: bob still owns it, the value stays.
	live = mustApply(t, m, live, "alice", deployBase)
	if r := replicas(live); r == nil || *r != 1 {
		t.Fatalf("replicas after one of two owners dropped it: %v", r)
	}
	if got := owners(t, live, ".spec.replicas"); strings.Join(got, ",") != "bob" {
		t.Fatalf("owners after alice dropped replicas: %v", got)
	}
	// bob, its last owner, stops applying it: the field is removed.
	live = mustApply(t, m, live, "bob", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\n")
	if r := replicas(live); r != nil {
		t.Fatalf("replicas after its last owner dropped it: %v, want unset", *r)
	}

	// force takes a field from its owner.
	live = mustApply(t, m, live, "alice", withReplicas("3"))
	live, err = applyYAML(t, m, live, "bob", replicasOnly("5"), true)
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if r := replicas(live); *r != 5 {
		t.Fatalf("replicas after force: %d", *r)
	}
	if got := owners(t, live, ".spec.replicas"); strings.Join(got, ",") != "bob" {
		t.Fatalf("owners after force: %v", got)
	}
	// alice applying her old value now conflicts with bob.
	if _, err := applyYAML(t, m, live, "alice", withReplicas("3"), false); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"bob"`) {
		t.Fatalf("apply after losing the field: %v", err)
	}
}

// TestConflictWithUpdater: a field last written by an Update (kubectl scale, a
// controller) conflicts with an applier, named with its operation's version and time.
func TestConflictWithUpdater(t *testing.T) {
	m := deployments(t)
	live := mustApply(t, m, m.New(), "alice", withReplicas("1"))
	next := live.DeepCopyObject().(*appsv1.Deployment)
	r := int32(4)
	next.Spec.Replicas = &r
	live = m.Update(live.DeepCopyObject(), next, "kubectl-scale", "")
	if got := owners(t, live, ".spec.replicas"); strings.Join(got, ",") != "kubectl-scale" {
		t.Fatalf("owners after an update: %v", got)
	}
	_, err := applyYAML(t, m, live, "alice", withReplicas("1"), false)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "kubectl-scale" using apps/v1`) {
		t.Fatalf("apply over an updater's field: %v", err)
	}
}

// TestMultipleConflicts: the message lists every manager and every field.
func TestMultipleConflicts(t *testing.T) {
	m := deployments(t)
	live := mustApply(t, m, m.New(), "alice", withReplicas("1"))
	live = mustApply(t, m, live, "carol", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  minReadySeconds: 3\n")
	_, err := applyYAML(t, m, live, "bob", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 2\n  minReadySeconds: 4\n", false)
	var se *apierrors.StatusError
	if !errors.As(err, &se) || len(se.ErrStatus.Details.Causes) != 2 {
		t.Fatalf("two conflicts: %v", err)
	}
	for _, want := range []string{"Apply failed with 2 conflicts", `conflicts with "alice":`, "- .spec.replicas", `conflicts with "carol":`, "- .spec.minReadySeconds"} {
		if !strings.Contains(se.ErrStatus.Message, want) {
			t.Errorf("message %q lacks %q", se.ErrStatus.Message, want)
		}
	}
}

// TestManagedFieldsEntries: an Update entry per manager with operation, apiVersion, time,
// FieldsV1 and subresource; updates by the same manager merge into one entry.
func TestManagedFieldsEntries(t *testing.T) {
	m := newManager(t, Resource{Kind: podKind, Subresources: []string{"status"}, ResetFields: DefaultResetFields(true)})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	live := m.Update(m.New(), pod, "kubectl-create", "")
	mf := managedOf(live)
	if len(mf) != 1 {
		t.Fatalf("entries after create: %+v", mf)
	}
	e := mf[0]
	if e.Manager != "kubectl-create" || e.Operation != metav1.ManagedFieldsOperationUpdate || e.APIVersion != "v1" ||
		e.FieldsType != "FieldsV1" || e.Time == nil || e.Subresource != "" {
		t.Fatalf("entry: %+v", e)
	}
	for _, want := range []string{`"f:labels"`, `"k:{\"name\":\"c\"}"`, `"f:image"`} {
		if !strings.Contains(string(e.FieldsV1.Raw), want) {
			t.Errorf("fields %s lack %s", e.FieldsV1.Raw, want)
		}
	}

	// The same manager again: one entry.
	next := live.DeepCopyObject().(*corev1.Pod)
	next.Labels["b"] = "2"
	live = m.Update(live.DeepCopyObject(), next, "kubectl-create", "")
	if n := len(managedOf(live)); n != 1 {
		t.Fatalf("entries after a second update by the same manager: %d", n)
	}

	// A main-resource write does not own status; a status write owns only status, in an
	// entry of its own.
	next = live.DeepCopyObject().(*corev1.Pod)
	next.Status.Phase = corev1.PodRunning
	next.Spec.ActiveDeadlineSeconds = new(int64)
	live = m.Update(live.DeepCopyObject(), next, "kubelet", "status")
	next = live.DeepCopyObject().(*corev1.Pod)
	next.Status.Message = "hi"
	live = m.Update(live.DeepCopyObject(), next, "meddler", "")
	var status *metav1.ManagedFieldsEntry
	for i, e := range managedOf(live) {
		if e.Manager == "kubelet" {
			status = &managedOf(live)[i]
		}
		if e.Manager == "meddler" {
			t.Errorf("a main-resource update that only changed status got an entry: %s", e.FieldsV1.Raw)
		}
	}
	if status == nil || status.Subresource != "status" || !strings.Contains(string(status.FieldsV1.Raw), `"f:phase"`) ||
		strings.Contains(string(status.FieldsV1.Raw), "f:spec") {
		t.Fatalf("status entry: %+v", status)
	}
	if got := owners(t, live, ".status.phase"); strings.Join(got, ",") != "kubelet" {
		t.Fatalf("owners of .status.phase: %v", got)
	}
}

// TestManagedFieldsFromRequest: a request that sets managedFields itself is honoured (as
// kubectl's client-side to server-side migration does with a JSON patch); an empty list
// resets them; a subresource write cannot change them.
func TestManagedFieldsFromRequest(t *testing.T) {
	m := deployments(t)
	live := mustApply(t, m, m.New(), "alice", withReplicas("1"))
	next := live.DeepCopyObject().(*appsv1.Deployment)
	next.ManagedFields[0].Manager = "renamed"
	out := m.Update(live.DeepCopyObject(), next, "kubectl-patch", "")
	if got := owners(t, out, ".spec.replicas"); strings.Join(got, ",") != "renamed" {
		t.Fatalf("owners after a write of managedFields: %v", got)
	}
	next = live.DeepCopyObject().(*appsv1.Deployment)
	next.ManagedFields = []metav1.ManagedFieldsEntry{}
	out = m.Update(live.DeepCopyObject(), next, "resetter", "")
	if mf := managedOf(out); len(mf) != 0 {
		t.Fatalf("managedFields after a reset: %+v", mf)
	}
	next = live.DeepCopyObject().(*appsv1.Deployment)
	next.ManagedFields[0].Manager = "renamed"
	out = m.Update(live.DeepCopyObject(), next, "status-writer", "status")
	if got := owners(t, out, ".spec.replicas"); strings.Join(got, ",") != "alice" {
		t.Fatalf("owners after a status write of managedFields: %v", got)
	}
}

// TestUpdateManagersCapped: at most 10 Update entries, the oldest merged, as upstream.
func TestUpdateManagersCapped(t *testing.T) {
	m := newManager(t, Resource{Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap")})
	live := m.New()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{}}
	for i := 0; i < 15; i++ {
		next := cm.DeepCopy()
		next.Data[string(rune('a'+i))] = "x"
		live = m.Update(live, next, "writer-"+string(rune('a'+i)), "")
		cm = live.(*corev1.ConfigMap).DeepCopy()
		live = live.DeepCopyObject()
	}
	var updates int
	for _, e := range managedOf(live) {
		if e.Operation == metav1.ManagedFieldsOperationUpdate {
			updates++
		}
	}
	if updates > 10 {
		t.Fatalf("%d Update entries, want at most 10", updates)
	}
}

// TestListMapMerging: containers are a map keyed by name and ports by containerPort and
// protocol, so two appliers' containers and ports merge (upstream's markers from
// client-go's schemas).
func TestListMapMerging(t *testing.T) {
	m := deployments(t)
	live := mustApply(t, m, m.New(), "alice", deployBase)
	live = mustApply(t, m, live, "bob", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: sidecar
        image: busybox
      - name: web
        ports:
        - containerPort: 8080
          protocol: TCP
`)
	live = mustApply(t, m, live, "alice", strings.Replace(deployBase, "image: nginx", "image: nginx\n        ports:\n        - containerPort: 80\n          protocol: TCP", 1))
	cs := live.(*appsv1.Deployment).Spec.Template.Spec.Containers
	if len(cs) != 2 {
		t.Fatalf("containers: %+v", cs)
	}
	var web *corev1.Container
	for i := range cs {
		if cs[i].Name == "web" {
			web = &cs[i]
		}
	}
	if web == nil || web.Image != "nginx" || len(web.Ports) != 2 {
		t.Fatalf("web container: %+v", web)
	}
	if got := owners(t, live, `.spec.template.spec.containers[name="web"].ports[containerPort=8080,protocol="TCP"]`); strings.Join(got, ",") != "bob" {
		t.Fatalf("owners of port 8080: %v", got)
	}
	// bob drops his sidecar: only it goes.
	live = mustApply(t, m, live, "bob", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n")
	cs = live.(*appsv1.Deployment).Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "web" || len(cs[0].Ports) != 1 || cs[0].Ports[0].ContainerPort != 80 {
		t.Fatalf("containers after bob dropped his: %+v", cs)
	}
	// A duplicate key in an applied list is the client's error, named.
	_, err := applyYAML(t, m, live, "bob", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  template:
    spec:
      containers:
      - {name: x, image: a}
      - {name: x, image: b}
`, false)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "Deployment default/web") {
		t.Fatalf("duplicate list key: %v", err)
	}
}

// TestApplyInputErrors: bad apply bodies are 400s naming the object and the field.
func TestApplyInputErrors(t *testing.T) {
	m := deployments(t)
	for _, tc := range []struct{ name, body, want string }{
		{"unknown field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicaz: 2\n", "replicaz"},
		{"wrong type", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: many\n", ".spec.replicas"},
		{"other version", "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: web}\n", "invalid object type: apps/v1beta1"},
		{"other kind", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web}\n", `kind "ReplicaSet"`},
		{"managedFields", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, managedFields: [{manager: x}]}\n", "managedFields must be nil"},
		{"not yaml", "{[", "error decoding"},
		{"empty", "", "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := m.Apply(m.New(), []byte(tc.body), ApplyOptions{Manager: "x"})
			if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a 400 mentioning %q, got %v", tc.want, err)
			}
		})
	}
	// Duplicate fields: refused under Strict, a warning under Warn, ignored under Ignore.
	dup := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  replicas: 2\n"
	if _, _, err := m.Apply(m.New(), []byte(dup), ApplyOptions{Manager: "x", Validation: ValidationStrict}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "replicas") {
		t.Fatalf("strict duplicate: %v", err)
	}
	if _, w, err := m.Apply(m.New(), []byte(dup), ApplyOptions{Manager: "x", Validation: ValidationWarn}); err != nil || len(w) != 1 {
		t.Fatalf("warn duplicate: %v %v", w, err)
	}
}

// TestClientSideToServerSide: an object created by client-side apply (the last-applied
// annotation, an Update entry of kubectl-client-side-apply) takes a server-side apply of
// the fields it last applied without a conflict, and the annotation follows the applied
// configuration (upstream's last-applied manager and updater).
func TestClientSideToServerSide(t *testing.T) {
	m := deployments(t)
	obj := &appsv1.Deployment{}
	if err := json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
		"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx"}]}}}}`), obj); err != nil {
		t.Fatal(err)
	}
	applied, _ := json.Marshal(obj)
	obj.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: string(applied)}
	live := m.Update(m.New(), obj, "kubectl-client-side-apply", "")

	live, err := applyYAML(t, m, live, "kubectl", withReplicas("2"), false)
	if err != nil {
		t.Fatalf("server-side apply over client-side apply: %v", err)
	}
	if *replicas(live) != 2 {
		t.Fatalf("replicas: %d", *replicas(live))
	}
	if got := owners(t, live, ".spec.replicas"); strings.Join(got, ",") != "kubectl" {
		t.Fatalf("owners of replicas: %v", got)
	}
	la := live.(*appsv1.Deployment).Annotations[corev1.LastAppliedConfigAnnotation]
	if !strings.Contains(la, `"replicas":2`) {
		t.Fatalf("last-applied annotation after the server-side apply: %s", la)
	}
}

func TestManagerName(t *testing.T) {
	for _, tc := range []struct{ fm, ua, want string }{
		{"helm", "kubectl/v1.32.0", "helm"},
		{"", "kubectl/v1.32.0 (linux/amd64) kubernetes/abc", "kubectl"},
		{"", "kube-controller-manager/v1.32.0", "kube-controller-manager"},
		{"", "my\x00agent/1", "myagent"},
		{"", strings.Repeat("x", 200), strings.Repeat("x", 128)},
		{"", "", ""},
	} {
		if got := ManagerName(tc.fm, tc.ua); got != tc.want {
			t.Errorf("ManagerName(%q, %q) = %q, want %q", tc.fm, tc.ua, got, tc.want)
		}
	}
}

func TestValidatePatchOptions(t *testing.T) {
	force := true
	if err := ValidatePatchOptions(types.ApplyYAMLPatchType, "", nil); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "fieldManager") {
		t.Fatalf("apply without a manager: %v", err)
	}
	if err := ValidatePatchOptions(types.MergePatchType, "", &force); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "force") {
		t.Fatalf("force on a merge patch: %v", err)
	}
	if err := ValidatePatchOptions(types.ApplyYAMLPatchType, "kubectl", &force); err != nil {
		t.Fatal(err)
	}
}

func TestKeepValid(t *testing.T) {
	m := deployments(t)
	live := mustApply(t, m, m.New(), "alice", withReplicas("1"))
	before := managedOf(live)
	live.(*appsv1.Deployment).ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x", Operation: "Bogus"}}
	if w := KeepValid(live, before); w == "" || len(managedOf(live)) != len(before) || managedOf(live)[0].Manager != "alice" {
		t.Fatalf("invalid managedFields kept: %q %+v", w, managedOf(live))
	}
}

// TestScale: a scale write takes spec.replicas from the applier in an entry of its own
// (subresource scale), and the applier's next apply of another value conflicts with it.
func TestScale(t *testing.T) {
	m := deployments(t)
	live := mustApply(t, m, m.New(), "alice", withReplicas("1"))
	sc, err := NewScale(appsv1.SchemeGroupVersion, fieldpath.MakePathOrDie("spec", "replicas"))
	if err != nil {
		t.Fatal(err)
	}
	d := live.(*appsv1.Deployment)
	old := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
	next := old.DeepCopy()
	next.Spec.Replicas = 3
	entries, err := sc.Update(d.ManagedFields, old, next, "kubectl-scale")
	if err != nil {
		t.Fatal(err)
	}
	d = d.DeepCopy()
	d.ManagedFields = entries
	r := int32(3)
	d.Spec.Replicas = &r
	if got := owners(t, d, ".spec.replicas"); strings.Join(got, ",") != "kubectl-scale" {
		t.Fatalf("owners of replicas after a scale: %v", got)
	}
	for _, e := range entries {
		if e.Manager == "kubectl-scale" && (e.Subresource != "scale" || e.APIVersion != "apps/v1") {
			t.Fatalf("scale entry: %+v", e)
		}
	}
	if got := owners(t, d, ".spec.template.spec.containers[name=\"web\"].image"); strings.Join(got, ",") != "alice" {
		t.Fatalf("the applier lost other fields: %v", got)
	}
	if _, err := applyYAML(t, m, d, "alice", withReplicas("1"), false); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"kubectl-scale" with subresource "scale"`) {
		t.Fatalf("apply after a scale: %v", err)
	}
}

// TestUnvalidatedMatchesValidated: the update path that skips the schema validation of
// the server's own Go objects records the same fields as upstream's validating one,
// lists with duplicate keys (which Kubernetes stores, env for one) included.
func TestUnvalidatedMatchesValidated(t *testing.T) {
	m := newManager(t, Resource{Kind: podKind, Subresources: []string{"status"}, ResetFields: DefaultResetFields(true)})
	base := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Env:   []corev1.EnvVar{{Name: "X", Value: "1"}, {Name: "X", Value: "2"}},
			Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: "TCP"}, {ContainerPort: 80, Protocol: "TCP"}}}}}}
	for _, tc := range []struct {
		name   string
		change func(p *corev1.Pod)
	}{
		{"label", func(p *corev1.Pod) { p.Labels["b"] = "2" }},
		{"duplicate env changed", func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].Value = "3" }},
		{"env added", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "Y"})
		}},
		{"container added", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d", Image: "x"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			safe := m.managers[""]
			liveSafe := safe.UpdateNoErrors(m.New(), base.DeepCopy(), "creator")
			liveFast := m.Update(m.New(), base.DeepCopy(), "creator", "")
			nextSafe := liveSafe.DeepCopyObject().(*corev1.Pod)
			tc.change(nextSafe)
			nextFast := liveFast.DeepCopyObject().(*corev1.Pod)
			tc.change(nextFast)
			gotSafe := safe.UpdateNoErrors(liveSafe.DeepCopyObject(), nextSafe, "editor")
			gotFast := m.Update(liveFast.DeepCopyObject(), nextFast, "editor", "")
			a, b := managedOf(gotSafe), managedOf(gotFast)
			if len(a) != len(b) {
				t.Fatalf("entries: validated %+v, unvalidated %+v", a, b)
			}
			for i := range a {
				if a[i].Manager != b[i].Manager || string(a[i].FieldsV1.Raw) != string(b[i].FieldsV1.Raw) {
					t.Fatalf("entry %d: validated %s %s, unvalidated %s %s", i, a[i].Manager, a[i].FieldsV1.Raw, b[i].Manager, b[i].FieldsV1.Raw)
				}
			}
		})
	}
}

// TestApplyJSONBody: a JSON body (what kubectl sends) merges as its YAML form does, keeps
// large integers exact, and its duplicate fields are refused under Strict.
func TestApplyJSONBody(t *testing.T) {
	m := newManager(t, Resource{Kind: corev1.SchemeGroupVersion.WithKind("Pod")})
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"activeDeadlineSeconds":9007199254740993,"containers":[{"name":"c","image":"busybox"}]}}`
	out, _, err := m.Apply(m.New(), []byte(body), ApplyOptions{Manager: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if p := out.(*corev1.Pod); p.Spec.ActiveDeadlineSeconds == nil || *p.Spec.ActiveDeadlineSeconds != 9007199254740993 || p.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("applied pod: %+v", p.Spec)
	}
	dup := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","name":"q"}}`
	if _, _, err := m.Apply(m.New(), []byte(dup), ApplyOptions{Manager: "x", Validation: ValidationStrict}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("strict duplicate in JSON: %v", err)
	}
}

// TestUnknownKind: a built-in kind missing from Scheme gets no field manager (an error
// the registry turns into "entries unchanged"), never a panic on the first create.
func TestUnknownKind(t *testing.T) {
	if _, err := New(Resource{Kind: schema.GroupVersionKind{Group: "nowhere.example", Version: "v1", Kind: "Thing"}}); err == nil {
		t.Fatal("a field manager for a kind the scheme does not know")
	}
}

// TestConcurrentWrites: one Manager serves concurrent writes (the API server shares one
// per resource); run with -race.
func TestConcurrentWrites(t *testing.T) {
	m := deployments(t)
	done := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			live, _, err := m.Apply(m.New(), []byte(withReplicas(fmt.Sprint(i))), ApplyOptions{Manager: fmt.Sprint("m", i)})
			if err == nil {
				next := live.DeepCopyObject().(*appsv1.Deployment)
				next.Labels = map[string]string{"i": fmt.Sprint(i)}
				m.Update(live, next, "labeller", "")
			}
			done <- err
		}(i)
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
