package apiserver_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// fieldCause reports whether err is a 422 whose causes name path.
func fieldCause(err error, path string) bool {
	var se *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errors.As(err, &se) || se.ErrStatus.Details == nil {
		return false
	}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Field == path {
			return true
		}
	}
	return false
}

func TestEphemeralContainersSubresource(t *testing.T) {
	srv := apiservertest.Start(t)
	pods := srv.Client.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, boundPod("web", "n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// As kubectl debug does it: a strategic merge patch of the pod with one more
	// ephemeral container, to the subresource.
	withDebugger := func(p *corev1.Pod, name, target string) []byte {
		t.Helper()
		from, _ := json.Marshal(p)
		next := p.DeepCopy()
		next.Spec.EphemeralContainers = append(next.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox", Stdin: true, TTY: true,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile},
			TargetContainerName: target,
		})
		to, _ := json.Marshal(next)
		patch, err := strategicpatch.CreateTwoWayMergePatch(from, to, p)
		if err != nil {
			t.Fatal(err)
		}
		return patch
	}
	got, err := pods.Patch(ctx, "web", types.StrategicMergePatchType, withDebugger(pod, "debugger", "c"), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatalf("patch pods/web/ephemeralcontainers: %v", err)
	}
	if n := len(got.Spec.EphemeralContainers); n != 1 || got.Spec.EphemeralContainers[0].TargetContainerName != "c" {
		t.Fatalf("ephemeral containers after the patch: %+v", got.Spec.EphemeralContainers)
	}
	if ec := got.Spec.EphemeralContainers[0]; ec.TerminationMessagePath != corev1.TerminationMessagePathDefault || ec.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("ephemeral container not defaulted: path %q, pull policy %q", ec.TerminationMessagePath, ec.ImagePullPolicy)
	}

	// GET returns the pod.
	var fetched corev1.Pod
	if err := srv.Client.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").Name("web").SubResource("ephemeralcontainers").Do(ctx).Into(&fetched); err != nil {
		t.Fatalf("get pods/web/ephemeralcontainers: %v", err)
	}
	if fetched.Name != "web" || len(fetched.Spec.EphemeralContainers) != 1 {
		t.Fatalf("get returned %s with %d ephemeral containers", fetched.Name, len(fetched.Spec.EphemeralContainers))
	}

	// PUT keeps only spec.ephemeralContainers of the body: the image change and the label
	// are dropped, the second debugger is added.
	in := fetched.DeepCopy()
	in.Spec.Containers[0].Image = "nginx"
	in.Labels["sneaked"] = "in"
	in.Spec.EphemeralContainers = append(in.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "second", Image: "busybox:1.36", TerminationMessagePolicy: corev1.TerminationMessageReadFile}})
	got, err = pods.UpdateEphemeralContainers(ctx, "web", in, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update pods/web/ephemeralcontainers: %v", err)
	}
	if len(got.Spec.EphemeralContainers) != 2 || got.Spec.Containers[0].Image != "busybox" || got.Labels["sneaked"] != "" {
		t.Fatalf("update changed more than the ephemeral containers: image %q, labels %v, %d ephemeral", got.Spec.Containers[0].Image, got.Labels, len(got.Spec.EphemeralContainers))
	}

	// Refused updates name the field.
	cases := []struct {
		name   string
		change func(p *corev1.Pod)
		field  string
	}{
		{"removed", func(p *corev1.Pod) { p.Spec.EphemeralContainers = p.Spec.EphemeralContainers[:1] }, "spec.ephemeralContainers"},
		{"changed", func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "other" }, "spec.ephemeralContainers"},
		{"unknown target", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "third", Image: "busybox"}, TargetContainerName: "nope"})
		}, "spec.ephemeralContainers[2].targetContainerName"},
		{"name of an app container", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "c", Image: "busybox"}})
		}, "spec.ephemeralContainers[2].name"},
		{"ports", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "third", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}})
		}, "spec.ephemeralContainers[2].ports"},
	}
	for _, c := range cases {
		in := got.DeepCopy()
		c.change(in)
		_, err := pods.UpdateEphemeralContainers(ctx, "web", in, metav1.UpdateOptions{})
		if !fieldCause(err, c.field) {
			t.Errorf("%s: want 422 naming %s, got %v", c.name, c.field, err)
		}
	}

	// An ordinary pod update cannot add one; a pod cannot be created with one.
	main := got.DeepCopy()
	main.Spec.EphemeralContainers = append(main.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "third", Image: "busybox", TerminationMessagePolicy: corev1.TerminationMessageReadFile}})
	if _, err := pods.Update(ctx, main, metav1.UpdateOptions{}); !fieldCause(err, "spec") {
		t.Errorf("a pod update adding an ephemeral container: want 422 on spec, got %v", err)
	}
	fresh := boundPod("fresh", "n1")
	fresh.Spec.EphemeralContainers = main.Spec.EphemeralContainers
	if _, err := pods.Create(ctx, fresh, metav1.CreateOptions{}); !fieldCause(err, "spec.ephemeralContainers") {
		t.Errorf("a pod created with ephemeral containers: want 422 on spec.ephemeralContainers, got %v", err)
	}

	// POST is not a verb of the subresource.
	res := srv.Client.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("web").SubResource("ephemeralcontainers").Body(got).Do(ctx)
	var code int
	res.StatusCode(&code)
	if code != http.StatusMethodNotAllowed {
		t.Errorf("POST pods/web/ephemeralcontainers: status %d, want 405 (%v)", code, res.Error())
	}

	// The kubelet's credential may not add one, even to a pod of its node.
	node := mustClient(t, srv.NodeConfig(t, "n1")).CoreV1().Pods("default")
	_, err = node.Patch(ctx, "web", types.StrategicMergePatchType, withDebugger(got, "node-debugger", ""), metav1.PatchOptions{}, "ephemeralcontainers")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "pods/ephemeralcontainers") {
		t.Errorf("node credential on pods/ephemeralcontainers: want 403 naming the subresource, got %v", err)
	}

	// Discovery lists it with its verbs, as kubectl looks for it.
	rl, err := srv.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rl.APIResources {
		if r.Name == "pods/ephemeralcontainers" {
			found = strings.Join(r.Verbs, ",") == "get,patch,update" && r.Kind == "Pod"
		}
	}
	if !found {
		t.Error("discovery: pods/ephemeralcontainers (kind Pod, verbs get,patch,update) not listed")
	}
}
