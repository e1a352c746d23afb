//go:build !wasip1

package main

import (
	"testing"

	"github.com/tidwall/gjson"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

func TestViolations(t *testing.T) {
	spec := gjson.Parse(`{"spec": {"hostNetwork": true,
		"initContainers": [{"name": "setup", "securityContext": {"privileged": false}}],
		"containers": [{"name": "app"}, {"name": "root", "securityContext": {"privileged": true}}],
		"ephemeralContainers": [{"name": "debug", "securityContext": {"privileged": true}}],
		"volumes": [{"name": "data", "emptyDir": {}}, {"name": "host", "hostPath": {"path": "/"}}]}}`)
	got := Violations(spec.Get)
	want := []sdk.FieldError{
		{Path: "spec.hostNetwork", Msg: "the node's network is not allowed"},
		{Path: "spec.containers[1].securityContext.privileged", Msg: "container root may not be privileged"},
		{Path: "spec.ephemeralContainers[0].securityContext.privileged", Msg: "container debug may not be privileged"},
		{Path: "spec.volumes[1].hostPath", Msg: "volume host may not mount a host path"},
	}
	if len(got) != len(want) {
		t.Fatalf("violations %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("violation %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestPolicyThroughTheHost(t *testing.T) {
	p := admitwasmtest.Load(t, "no-privileged", wasmbuild.Go(t, "wasm-examples/go/no-privileged"), "")
	yes := true
	base := func() *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36"}},
			Volumes:    []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	}
	privileged := base()
	privileged.Spec.Containers = append(privileged.Spec.Containers, v1.Container{Name: "root", Image: "busybox:1.36", SecurityContext: &v1.SecurityContext{Privileged: &yes}})
	hostPath := base()
	hostPath.Spec.Volumes = append(hostPath.Spec.Volumes, v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/run"}}})
	hostNet := base()
	hostNet.Spec.HostNetwork = true
	all := hostPath.DeepCopy()
	all.Spec.HostNetwork = true
	all.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox:1.36", SecurityContext: &v1.SecurityContext{Privileged: &yes}}}
	tests := []struct {
		name    string
		pod     *v1.Pod
		allowed bool
		msg     string
	}{
		{"sandboxed", base(), true, ""},
		{"privileged", privileged, false, "spec.containers[1].securityContext.privileged: container root may not be privileged"},
		{"hostPath", hostPath, false, "spec.volumes[1].hostPath: volume host may not mount a host path"},
		{"hostNetwork", hostNet, false, "spec.hostNetwork: the node's network is not allowed"},
		{"all three", all, false, "spec.hostNetwork: the node's network is not allowed\n" +
			"spec.initContainers[0].securityContext.privileged: container setup may not be privileged\n" +
			"spec.volumes[1].hostPath: volume host may not mount a host path"},
	}
	for _, tt := range tests {
		r := p.Run(t, admitwasmtest.CreatePod(tt.pod))
		if r.Err != nil || r.Allowed != tt.allowed || r.Message != tt.msg {
			t.Errorf("%s: allowed=%v message=%q err=%v, want allowed=%v message=%q", tt.name, r.Allowed, r.Message, r.Err, tt.allowed, tt.msg)
		}
	}
	if r := p.Run(t, admitwasmtest.UpdatePod(privileged, base())); r.Allowed {
		t.Error("an UPDATE to a privileged pod was allowed")
	}
	if r := p.Run(t, admitwasmtest.DeletePod(privileged)); !r.Allowed {
		t.Errorf("DELETE of a privileged pod: %q, want it allowed", r.Message)
	}
}
