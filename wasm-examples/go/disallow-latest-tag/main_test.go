//go:build !wasip1

package main

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

func TestIsFloating(t *testing.T) {
	tests := []struct {
		image    string
		floating bool
	}{
		{"busybox", true},
		{"busybox:latest", true},
		{"busybox:1.36", false},
		{"docker.io/library/busybox", true},
		{"localhost:5000/app", true}, // the port is not a tag
		{"localhost:5000/app:latest", true},
		{"localhost:5000/app:v2", false},
		{"busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", false},
		{"busybox:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", false},
		{"busybox:latest-slim", false},
		{"busybox:Latest", false}, // tags are case-sensitive
	}
	for _, tt := range tests {
		if got := IsFloating(tt.image); got != tt.floating {
			t.Errorf("IsFloating(%q) = %v, want %v", tt.image, got, tt.floating)
		}
	}
	if got := Floating([]string{"a", "b:1", "a", "c:latest"}); len(got) != 2 || got[0] != "a" || got[1] != "c:latest" {
		t.Errorf("Floating = %v, want [a c:latest]", got)
	}
	if Message(nil) != "" {
		t.Error("a message without floating images")
	}
}

func TestPolicyThroughTheHost(t *testing.T) {
	p := admitwasmtest.Load(t, "disallow-latest-tag", wasmbuild.Go(t, "wasm-examples/go/disallow-latest-tag"), "")
	pod := func(init string, images ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		if init != "" {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: init}}
		}
		for i, img := range images {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Image: img})
		}
		return p
	}
	tests := []struct {
		name    string
		pod     *v1.Pod
		allowed bool
		msg     string
	}{
		{"pinned", pod("", "busybox:1.36", "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"), true, ""},
		{"latest", pod("", "busybox:latest"), false, "image busybox:latest has no tag or the tag latest: pin a version or a digest"},
		{"no tag in an init container", pod("busybox", "nginx:1.27"), false, "image busybox has no tag or the tag latest: pin a version or a digest"},
		{"several", pod("busybox", "nginx", "busybox", "redis:7"), false, "images busybox, nginx have no tag or the tag latest: pin a version or a digest"},
	}
	for _, tt := range tests {
		r := p.Run(t, admitwasmtest.CreatePod(tt.pod))
		if r.Err != nil || r.Allowed != tt.allowed || r.Message != tt.msg {
			t.Errorf("%s: allowed=%v message=%q err=%v, want allowed=%v message=%q", tt.name, r.Allowed, r.Message, r.Err, tt.allowed, tt.msg)
		}
	}
	if r := p.Run(t, admitwasmtest.DeletePod(pod("", "busybox"))); !r.Allowed {
		t.Errorf("DELETE: %q, want it allowed", r.Message)
	}
}
