// Package defaultbinder is the DefaultBinder plugin: it binds a pod by creating its
// pods/binding subresource, the only way the scheduler writes spec.nodeName.
package defaultbinder

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Name of the plugin.
const Name = "DefaultBinder"

// AnnotationsKey is where the scheduler leaves annotations (the explanation) that the
// binding carries onto the pod, as the API server copies a Binding's annotations.
const AnnotationsKey framework.StateKey = "wasmkube.io/binding-annotations"

// Annotations is the StateData under AnnotationsKey.
type Annotations map[string]string

// Clone implements framework.StateData.
func (a Annotations) Clone() framework.StateData { return a }

// DefaultBinder implements Bind.
type DefaultBinder struct{ h framework.Handle }

// New is the factory.
func New(_ context.Context, args json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	return &DefaultBinder{h: h}, framework.DecodeArgs(Name, args, &struct{}{})
}

// Name implements framework.Plugin.
func (*DefaultBinder) Name() string { return Name }

// Bind implements framework.BindPlugin.
func (b *DefaultBinder) Bind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) *framework.Status {
	cs := b.h.ClientSet()
	if cs == nil {
		return framework.AsStatus(fmt.Errorf("bind pod %s/%s: no API client", pod.Namespace, pod.Name))
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	if d, ok := state.Read(AnnotationsKey); ok {
		binding.Annotations = d.(Annotations)
	}
	if err := cs.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return framework.AsStatus(fmt.Errorf("bind pod %s/%s to node %s: %w", pod.Namespace, pod.Name, node, err))
	}
	return nil
}
