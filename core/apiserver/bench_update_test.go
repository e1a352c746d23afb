package apiserver_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// BenchmarkPodUpdate updates pods (a label change, client-go's typed Update in protobuf)
// from 16 concurrent clients, each on its own pod, and reports updates/s and the CPU of
// the whole process per update (client, TLS, API server and etcd together): the figure
// that managedFields tracking changes, compared A/B in docs/benchmarks.md.
//
//	go test ./core/apiserver -run '^$' -bench PodUpdate -benchtime 5000x
func BenchmarkPodUpdate(b *testing.B) {
	const clients = 16
	cs := benchClients(b, apiservertest.Start(b), clients)
	cur := make([]*corev1.Pod, clients)
	for w, c := range cs {
		if _, err := c.CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("u-%d", w)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		p, err := c.CoreV1().Pods("default").Get(ctx, fmt.Sprintf("u-%d", w), metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		cur[w] = p
	}
	l := drive(b, clients, func(w int, i int64) (err error) {
		cur[w].Labels["rev"] = fmt.Sprint(i)
		cur[w], err = cs[w].CoreV1().Pods("default").Update(ctx, cur[w], metav1.UpdateOptions{})
		return err
	})
	b.ReportMetric(float64(b.N)/l.elapsed.Seconds(), "updates/s")
	b.ReportMetric(l.cpuPerCallUs(b.N), "cpu-us/update")
}

// BenchmarkPodCreateCPU is BenchmarkPodCreate's work (16 clients creating pods) reporting
// the CPU of the whole process per create, for the same A/B.
//
//	go test ./core/apiserver -run '^$' -bench PodCreateCPU -benchtime 5000x
func BenchmarkPodCreateCPU(b *testing.B) {
	const clients = 16
	cs := benchClients(b, apiservertest.Start(b), clients)
	for i, c := range cs {
		if _, err := c.CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("warm-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	l := drive(b, clients, func(w int, i int64) error {
		_, err := cs[w].CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("p-%d", i)), metav1.CreateOptions{})
		return err
	})
	b.ReportMetric(float64(b.N)/l.elapsed.Seconds(), "creates/s")
	b.ReportMetric(l.cpuPerCallUs(b.N), "cpu-us/create")
}

// largeCRD is a CustomResourceDefinition of about size bytes of JSON; rev changes one
// description, so each apply is a real write.
func largeCRD(size, rev int) []byte {
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	def := apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "bigs.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "bigs", Singular: "big", Kind: "Big", ListKind: "BigList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Description: fmt.Sprintf("revision %d", rev),
					Properties:  map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}}}}}}},
	}
	for i := 0; ; i++ {
		b, _ := json.Marshal(def)
		if len(b) >= size {
			return b
		}
		inner := map[string]apiextensionsv1.JSONSchemaProps{}
		for j := 0; j < 8; j++ {
			inner[fmt.Sprintf("field%d", j)] = apiextensionsv1.JSONSchemaProps{Type: "string",
				Description: fmt.Sprintf("Field %d of group %d: a description long enough to look like generated API documentation.", j, i)}
		}
		props[fmt.Sprintf("group%d", i)] = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: inner}
	}
}

// BenchmarkApplyLargeCRD: `kubectl apply --server-side` of a 200 KB CRD, as its REST call
// (client-go, JSON body), against the real server, and the same object sent as a merge
// patch (client-side apply's kind of write) for comparison: ms per write as the client
// sees it (the server's time plus the client's encoding and TLS), after the create.
//
//	go test ./core/apiserver -run '^$' -bench ApplyLargeCRD -benchtime 20x
func BenchmarkApplyLargeCRD(b *testing.B) {
	for _, pt := range []types.PatchType{types.ApplyPatchType, types.MergePatchType} {
		b.Run(string(pt), func(b *testing.B) {
			srv := apiservertest.Start(b)
			rc := srv.Client.CoreV1().RESTClient()
			write := func(pt types.PatchType, body []byte) error {
				return rc.Patch(pt).AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/bigs.example.com").
					Param("fieldManager", "kubectl").Body(body).Do(ctx).Error()
			}
			if err := write(types.ApplyPatchType, largeCRD(200<<10, 0)); err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				body := largeCRD(200<<10, i+1)
				b.StartTimer()
				t0 := time.Now()
				if err := write(pt, body); err != nil {
					b.Fatal(err)
				}
				total += time.Since(t0)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/write")
		})
	}
}
