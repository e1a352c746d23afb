package apiserver_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/storage"
	"github.com/wasmkube/wasmkube/internal/kubeclient"
)

type seenEvent struct {
	typ                watch.EventType
	name, rv, app, img string
}

func collect(t *testing.T, w watch.Interface, n int) []seenEvent {
	t.Helper()
	var out []seenEvent
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d events", len(out))
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				t.Fatalf("event %s with %T", ev.Type, ev.Object)
			}
			out = append(out, seenEvent{ev.Type, p.Name, p.ResourceVersion, p.Labels["app"], p.Spec.Containers[0].Image})
		case <-time.After(60 * time.Second):
			t.Fatalf("no watch event within 60s (have %d of %d)", len(out), n)
		}
	}
	return out
}

// TestProtobufAndJSONWatchesSeeTheSameEvents: our components' clientset (protobuf
// requests, protobuf watch) and a JSON client (kubectl's kind) watching the same pods
// see the same events; the protobuf stream is framed as upstream's, and pods are stored
// in etcd as protobuf.
func TestProtobufAndJSONWatchesSeeTheSameEvents(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	pb, err := kubeclient.NewClientset(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := pb.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("protobuf list: %v", err)
	}
	rv := list.ResourceVersion
	var watches []watch.Interface
	for _, c := range []kubernetes.Interface{pb, srv.Client} {
		w, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Stop()
		watches = append(watches, w)
	}

	// Writes through the protobuf client: create, update, delete.
	p, err := pb.CoreV1().Pods("default").Create(ctx, testPod("pb1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("protobuf create: %v", err)
	}
	p.Labels["app"] = "api"
	if _, err := pb.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("protobuf update: %v", err)
	}
	if err := pb.CoreV1().Pods("default").Delete(ctx, "pb1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("protobuf delete: %v", err)
	}
	pbEvents, jsonEvents := collect(t, watches[0], 3), collect(t, watches[1], 3)
	if fmt.Sprint(pbEvents) != fmt.Sprint(jsonEvents) {
		t.Fatalf("protobuf watch saw %v\nJSON watch saw %v", pbEvents, jsonEvents)
	}
	if pbEvents[0].typ != watch.Added || pbEvents[1].typ != watch.Modified || pbEvents[1].app != "api" || pbEvents[2].typ != watch.Deleted || pbEvents[0].img != "busybox" {
		t.Fatalf("events %v, want ADDED, MODIFIED (app=api), DELETED of pb1", pbEvents)
	}

	// The wire: a protobuf watch is length-delimited metav1.WatchEvents whose objects
	// carry the "k8s\x00" envelope.
	if _, err := pb.CoreV1().Pods("default").Create(ctx, testPod("pb2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=30", nil)
	req.Header.Set("Accept", kubeclient.AcceptContentTypes)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Fatalf("protobuf watch Content-Type = %q", ct)
	}
	var n uint32
	if err := binary.Read(resp.Body, binary.BigEndian, &n); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, frame); err != nil {
		t.Fatal(err)
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(frame); err != nil {
		t.Fatalf("frame is not a metav1.WatchEvent: %v", err)
	}
	if ev.Type != "ADDED" || !bytes.HasPrefix(ev.Object.Raw, []byte("k8s\x00")) {
		t.Fatalf("first event: type %s, object %q", ev.Type, ev.Object.Raw)
	}

	raw, err := srv.API.EtcdClient().Get(ctx, storage.Key("pods", "default", "pb2"))
	if err != nil || len(raw.Kvs) != 1 || !bytes.HasPrefix(raw.Kvs[0].Value, []byte("k8s\x00")) {
		t.Fatalf("pod in etcd: %v %v", raw, err)
	}
}
