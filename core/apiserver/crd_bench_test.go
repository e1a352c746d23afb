package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
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
// creates/s, the latency of a full list through the dynamic client (ms/list, the mean of
// 5; ms/first-list, the first of them) and of the same list read as bytes, undecoded by
// the client (ms/raw-list, the mean of 5: the server's and the transport's part) for
// each kind, and the CPU time the whole process (server, etcd and clients) spent per
// create (cpu-us/create: less swayed by the machine's load than creates/s, which waits for
// the CPU too); docs/benchmarks.md has the figures.
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
				cpu0 := processCPU(b)
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
				cpu := processCPU(b) - cpu0
				select {
				case err := <-errs:
					b.Fatal(err)
				default:
				}
				var listed, firstList time.Duration
				for i := 0; i < lists; i++ {
					t0 := time.Now()
					l, err := res.List(ctx, metav1.ListOptions{})
					d := time.Since(t0)
					listed += d
					if i == 0 {
						firstList = d
					}
					if err != nil || len(l.Items) != objects+len(before.Items) {
						b.Fatalf("list: %v (%d items)", err, len(l.Items))
					}
				}
				// The same list as bytes, not decoded by the client: the server's and the
				// transport's part of a list.
				path := "/api/v1/namespaces/" + ns + "/configmaps"
				if k.gvr.Group != "" {
					path = "/apis/" + k.gvr.Group + "/" + k.gvr.Version + "/namespaces/" + ns + "/" + k.gvr.Resource
				}
				var rawListed time.Duration
				for i := 0; i < lists; i++ {
					t0 := time.Now()
					body, err := srv.Client.CoreV1().RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
					rawListed += time.Since(t0)
					if err != nil || len(body) < objects*300 {
						b.Fatalf("raw list: %v (%d bytes)", err, len(body))
					}
				}
				b.ReportMetric(float64(objects)/created.Seconds(), "creates/s")
				b.ReportMetric(float64(cpu.Microseconds())/objects, "cpu-us/create")
				b.ReportMetric(float64(listed.Milliseconds())/lists, "ms/list")
				b.ReportMetric(float64(firstList.Milliseconds()), "ms/first-list")
				b.ReportMetric(float64(rawListed.Milliseconds())/lists, "ms/raw-list")
			}
		})
	}
}

// processCPU is the user and system CPU time this process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
