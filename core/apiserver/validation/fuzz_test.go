package validation_test

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/validation"
)

// FuzzValidate: any object that decodes (as the API server decodes a body) is validated
// without a panic, on create and on update against itself and against an empty object.
// `go test` runs the seeds; `make fuzz` runs it for longer.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":70000}]}]}}`,
		`{"metadata":{"name":"-x-","labels":{"a/b/c":"v"},"ownerReferences":[{}]},"spec":{"volumes":[{"name":"v","configMap":{"items":[{"key":"","path":"../x"}]}}]}}`,
		`{"metadata":{"generateName":"a."},"spec":{"initContainers":[{"name":"c"}],"containers":[{"name":"c","resources":{"requests":{"cpu":"2"},"limits":{"cpu":"1"}}}]}}`,
		`{"spec":{"replicas":-3,"selector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]},"template":{"spec":{"containers":[]}}}}`,
		`{"spec":{"type":"NodePort","ports":[{"port":0,"nodePort":1}],"clusterIP":"None","clusterIPs":["1.1.1.1","::1","x"]}}`,
		`{"metadata":{"name":"n"},"spec":{"taints":[{"key":"","effect":"Nope"}],"podCIDR":"x"}}`,
		`{"metadata":{"name":"cm"},"data":{"":"v","a..b":"w"},"binaryData":{"a":""}}`,
	} {
		for k := uint8(0); k < 5; k++ {
			f.Add(k, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		news := []func() runtime.Object{
			func() runtime.Object { return &corev1.Pod{} },
			func() runtime.Object { return &appsv1.Deployment{} },
			func() runtime.Object { return &corev1.Service{} },
			func() runtime.Object { return &corev1.Node{} },
			func() runtime.Object { return &corev1.ConfigMap{} },
			func() runtime.Object { return &appsv1.StatefulSet{} },
			func() runtime.Object { return &corev1.Namespace{} },
		}
		mk := news[int(kind)%len(news)]
		obj := mk()
		if json.Unmarshal(body, obj) != nil {
			return
		}
		_ = validation.Validate(obj)
		_ = validation.ValidateUpdate(obj, obj.DeepCopyObject())
		_ = validation.ValidateUpdate(obj, mk())
		_ = validation.ValidateUpdate(mk(), obj)
	})
}
