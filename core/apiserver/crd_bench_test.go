package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// recordCRD is the benchmark's kind: five string fields in spec, checked by the schema
// (type and maxLength) and one CEL rule, as a typical operator's CRD would.
const recordCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: records.bench.example.com}
spec:
  group: bench.example.com
  scope: Namespaced
  names: {plural: records, kind: Record}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations: [{rule: "self.a != ''"}]
            properties:
              a: {type: string, maxLength: 100}
              b: {type: string, maxLength: 100}
              c: {type: string, maxLength: 100}
              d: {type: string, maxLength: 100}
              e: {type: string, maxLength: 100}
`

// BenchmarkCustomObjects creates 10,000 custom objects of one CRD and 10,000 ConfigMaps
// carrying the same five 50-byte strings (spec.a-e against data.a-e), from 16 clients
// through the dynamic client (JSON both ways), and lists each set whole. It reports
// creates/s and the latency of a full list (the mean of 5) for each kind; docs/benchmarks.md
// has the figures.
//
//	go test ./core/apiserver -run '^$' -bench CustomObjects -benchtime 1x -timeout 30m
func BenchmarkCustomObjects(b *testing.B) {
	const objects, clients, lists = 10000, 16, 5
	srv := apiservertest.Start(b)
	dc, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		b.Fatal(err)
	}
	value := strings.Repeat("x", 50)
	fields := map[string]any{"a": value, "b": value, "c": value, "d": value, "e": value}
	kinds := []struct {
		name string
		gvr  schema.GroupVersionResource
		obj  func(name string) *unstructured.Unstructured
	}{
		{"configmap", corev1.SchemeGroupVersion.WithResource("configmaps"), func(name string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name}, "data": fields}}
		}},
		{"custom", schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: "records"}, func(name string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bench.example.com/v1", "kind": "Record",
				"metadata": map[string]any{"name": name}, "spec": fields}}
		}},
	}
	createCRD(b, dc, recordCRD, kinds[1].gvr)
	ctx := context.Background()
	for _, k := range kinds {
		b.Run("kind="+k.name, func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				ns := fmt.Sprintf("bench-%s-%d", k.name, n)
				if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				res := dc.Resource(k.gvr).Namespace(ns)
				before, err := res.List(ctx, metav1.ListOptions{}) // a new namespace's kube-root-ca.crt
				if err != nil {
					b.Fatal(err)
				}
				work := make(chan int)
				errs := make(chan error, clients)
				var wg sync.WaitGroup
				start := time.Now()
				for c := 0; c < clients; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range work {
							if _, err := res.Create(ctx, k.obj(fmt.Sprintf("o-%d", i)), metav1.CreateOptions{}); err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				for i := 0; i < objects; i++ {
					work <- i
				}
				close(work)
				wg.Wait()
				created := time.Since(start)
				select {
				case err := <-errs:
					b.Fatal(err)
				default:
				}
				var listed time.Duration
				for i := 0; i < lists; i++ {
					t0 := time.Now()
					l, err := res.List(ctx, metav1.ListOptions{})
					listed += time.Since(t0)
					if err != nil || len(l.Items) != objects+len(before.Items) {
						b.Fatalf("list: %v (%d items)", err, len(l.Items))
					}
				}
				b.ReportMetric(float64(objects)/created.Seconds(), "creates/s")
				b.ReportMetric(float64(listed.Milliseconds())/lists, "ms/list")
			}
		})
	}
}
