package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
}

func TestClientGoCRUD(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")

	created, err := pods.Create(ctx, testPod("p1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("server-owned metadata missing: %+v", created.ObjectMeta)
	}
	if created.Status.Phase != corev1.PodPending {
		t.Fatalf("phase = %q, want Pending", created.Status.Phase)
	}
	got, err := pods.Get(ctx, "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.UID != created.UID {
		t.Fatalf("get returned uid %s, want %s", got.UID, created.UID)
	}
	if _, err := pods.Create(ctx, testPod("p1"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v, %d items", err, len(list.Items))
	}
	got.Labels["tier"] = "front"
	upd, err := pods.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if upd.Labels["tier"] != "front" {
		t.Fatalf("update lost label: %v", upd.Labels)
	}
	got.Labels["tier"] = "stale"
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: want Conflict, got %v", err)
	}
	if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := pods.Get(ctx, "p1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: want NotFound, got %v", err)
	}
	nss, err := srv.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil || len(nss.Items) != 4 {
		t.Fatalf("namespaces: %v %d", err, len(nss.Items))
	}
}

func TestInformerSeesChanges(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := srv.Client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(srv.Client, 0)
	inf := factory.Core().V1().Pods()
	events := make(chan string, 16)
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { events <- "add " + o.(*corev1.Pod).Name },
		UpdateFunc: func(_, o any) { events <- "update " + o.(*corev1.Pod).Name },
		DeleteFunc: func(o any) {
			if p, ok := o.(*corev1.Pod); ok {
				events <- "delete " + p.Name
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %q, want %q", got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no event, want %q", want)
		}
	}
	expect("add before")
	if _, err := pods.Create(ctx, testPod("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("add after")
	p, err := pods.Get(ctx, "after", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["x"] = "y"
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update after")
	if err := pods.Delete(ctx, "after", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("delete after")
	if got, err := inf.Lister().Pods("default").Get("before"); err != nil || got.Name != "before" {
		t.Fatalf("lister: %v %v", got, err)
	}
}

func TestWatchFromCompactedVersionIsGone(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithCompactionInterval(100*time.Millisecond))
	cms := srv.Client.CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Keep writing until the compactor has passed the first revision; a watch from it
	// must then end with an ERROR event carrying 410 Gone.
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatal("history was never compacted")
		}
		cm, err := cms.Get(ctx, "c", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"i": fmt.Sprint(i)}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		w, err := cms.Watch(wctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
		if err != nil {
			cancel()
			t.Fatalf("watch: %v", err)
		}
		ev, ok := <-w.ResultChan()
		w.Stop()
		cancel()
		if ok && ev.Type == watch.Error {
			st, _ := ev.Object.(*metav1.Status)
			if st == nil || st.Code != 410 || st.Reason != metav1.StatusReasonExpired && st.Reason != metav1.StatusReasonGone {
				t.Fatalf("error event: %+v", ev.Object)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPagingDeleteCollectionMetadataAndYAML(t *testing.T) {
	srv := apiservertest.Start(t)
	pods := srv.Client.CoreV1().Pods("default")
	for i := 0; i < 7; i++ {
		p := testPod(fmt.Sprintf("p%d", i))
		if i%2 == 0 {
			p.Labels["even"] = "true"
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// limit/continue pages through a consistent snapshot.
	var names []string
	opts := metav1.ListOptions{Limit: 3}
	for pages := 0; ; pages++ {
		l, err := pods.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		if l.Continue == "" {
			if pages != 2 {
				t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		opts.Continue = l.Continue
	}
	if len(names) != 7 {
		t.Fatalf("paged names %v", names)
	}
	// Metadata-only clients (garbage collector style) get PartialObjectMetadata.
	mc, err := metadata.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ml, err := mc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default").List(ctx, metav1.ListOptions{LabelSelector: "even=true"})
	if err != nil || len(ml.Items) != 4 || ml.Items[0].UID == "" {
		t.Fatalf("metadata list: %v %d", err, len(ml.Items))
	}
	// deletecollection with a selector.
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "even=true"}); err != nil {
		t.Fatal(err)
	}
	l, _ := pods.List(ctx, metav1.ListOptions{})
	if len(l.Items) != 3 {
		t.Fatalf("%d pods left after deletecollection, want 3", len(l.Items))
	}
	// YAML bodies.
	code, st := rawRequest(t, srv, "POST", "/api/v1/namespaces/default/configmaps", "application/yaml",
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n"))
	if code != 201 {
		t.Fatalf("yaml create: %d %s", code, st.Message)
	}
	cm, err := srv.Client.CoreV1().ConfigMaps("default").Get(ctx, "from-yaml", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "v" {
		t.Fatalf("yaml object: %v %v", err, cm)
	}
	// Updating a missing object is 404; dry-run delete keeps the object.
	cm2 := cm.DeepCopy()
	cm2.Name, cm2.ResourceVersion = "missing", ""
	if _, err := srv.Client.CoreV1().ConfigMaps("default").Update(ctx, cm2, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("update of a missing object: %v", err)
	}
	if err := srv.Client.CoreV1().ConfigMaps("default").Delete(ctx, "from-yaml", metav1.DeleteOptions{DryRun: []string{"All"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.CoreV1().ConfigMaps("default").Get(ctx, "from-yaml", metav1.GetOptions{}); err != nil {
		t.Fatalf("dry-run delete removed the object: %v", err)
	}
}

func TestDiscovery(t *testing.T) {
	srv := apiservertest.Start(t)
	// client-go asks for aggregated discovery first; the legacy documents must agree.
	for _, aggregated := range []bool{true, false} {
		dc, err := discovery.NewDiscoveryClientForConfig(srv.Config)
		if err != nil {
			t.Fatal(err)
		}
		dc.UseLegacyDiscovery = !aggregated
		_, lists, err := dc.ServerGroupsAndResources()
		if err != nil {
			t.Fatalf("aggregated=%v: %v", aggregated, err)
		}
		found := map[string]metav1.APIResource{}
		for _, l := range lists {
			for _, r := range l.APIResources {
				found[l.GroupVersion+"/"+r.Name] = r
			}
		}
		for key, short := range map[string]string{"v1/pods": "po", "v1/nodes": "no", "apps/v1/deployments": "deploy", "v1/services": "svc"} {
			r, ok := found[key]
			if !ok || len(r.ShortNames) == 0 || r.ShortNames[0] != short {
				t.Fatalf("aggregated=%v: %s: %+v", aggregated, key, r)
			}
		}
		if p := found["v1/pods"]; !p.Namespaced || p.Kind != "Pod" || len(p.Categories) != 1 || p.Categories[0] != "all" {
			t.Fatalf("aggregated=%v: pods: %+v", aggregated, p)
		}
		if s, ok := found["apps/v1/deployments/scale"]; !ok || s.Kind != "Scale" || s.Group != "autoscaling" {
			t.Fatalf("aggregated=%v: deployments/scale: %+v", aggregated, s)
		}
		if _, ok := found["v1/pods/log"]; !ok {
			t.Fatalf("aggregated=%v: no pods/log", aggregated)
		}
	}
	// The server answers client-go's first request in the aggregated form.
	req, _ := http.NewRequest("GET", srv.URL+"/apis", nil)
	req.Header.Set("Authorization", "Bearer "+srv.Config.BearerToken)
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	tr, _ := rest.TransportFor(&rest.Config{TLSClientConfig: srv.Config.TLSClientConfig})
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "as=APIGroupDiscoveryList") {
		t.Fatalf("content type %q", ct)
	}
}
