package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/statefulset"
)

const webManifest = `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80, name: web}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: busybox:1
`

// orderWatch follows a StatefulSet's pods and records every violation of OrderedReady:
// pod n created while n-1 is not Running and Ready, or pod n deleted while a higher one exists.
type orderWatch struct {
	mu         sync.Mutex
	pods       map[int]*corev1.Pod
	violations []string
	created    []string
	deleted    []string
	// updating: a rolling update deletes lower ordinals while higher (updated) ones exist;
	// then the rule is that the pod above is Running and Ready.
	updating bool
}

func (e *env) watchOrder(set string) *orderWatch {
	w, err := e.client.CoreV1().Pods("default").Watch(e.ctx, metav1.ListOptions{LabelSelector: "app=" + set})
	if err != nil {
		e.t.Fatal(err)
	}
	o := &orderWatch{pods: map[int]*corev1.Pod{}}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer w.Stop()
		for {
			select {
			case <-e.ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				n := statefulset.Ordinal(set, p.Name)
				o.mu.Lock()
				prev := o.pods[n]
				switch {
				case ev.Type == watch.Added:
					if n > 0 {
						if below := o.pods[n-1]; below == nil || below.DeletionTimestamp != nil || !podstate.IsReady(below) {
							o.violations = append(o.violations, fmt.Sprintf("%s created while %s-%d not ready", p.Name, set, n-1))
						}
					}
					o.created = append(o.created, p.Name)
					o.pods[n] = p
				case ev.Type == watch.Deleted:
					delete(o.pods, n)
				case p.DeletionTimestamp != nil && (prev == nil || prev.DeletionTimestamp == nil):
					for m, q := range o.pods {
						if o.updating && m == n+1 && (q.DeletionTimestamp != nil || !podstate.IsReady(q)) {
							o.violations = append(o.violations, fmt.Sprintf("%s replaced while %s-%d not ready", p.Name, set, m))
						}
						if !o.updating && m > n {
							o.violations = append(o.violations, fmt.Sprintf("%s deleted while %s-%d exists", p.Name, set, m))
						}
					}
					o.deleted = append(o.deleted, p.Name)
					o.pods[n] = p
				default:
					o.pods[n] = p
				}
				o.mu.Unlock()
			}
		}
	}()
	return o
}

func (o *orderWatch) check(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, v := range o.violations {
		t.Error(v)
	}
}

func TestStatefulSet(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 3, ctrl: ctrlOpts()})
	kubectl := kubectlFor(t, e)
	order := e.watchOrder("web")
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(webManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl("apply", "-f", manifest)
	if out := kubectl("rollout", "status", "statefulset/web", "--timeout=120s"); !strings.Contains(out, "roll out complete") && !strings.Contains(out, "rolling update complete") {
		t.Fatalf("rollout status: %s", out)
	}
	for i, want := range []string{"web-0", "web-1"} {
		p, err := e.client.CoreV1().Pods("default").Get(e.ctx, want, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.Hostname != want || p.Spec.Subdomain != "web" || p.Labels["apps.kubernetes.io/pod-index"] != fmt.Sprint(i) ||
			p.Labels["statefulset.kubernetes.io/pod-name"] != want || !strings.HasPrefix(p.Labels["controller-revision-hash"], "web-") {
			t.Errorf("pod %s: hostname %q subdomain %q labels %v", want, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
		}
	}
	if out := kubectl("get", "sts", "web", "--no-headers"); !strings.Contains(out, "2/2") {
		t.Errorf("kubectl get sts: %q", out)
	}

	kubectl("scale", "statefulset/web", "--replicas=4")
	kubectl("rollout", "status", "statefulset/web", "--timeout=120s")
	kubectl("scale", "statefulset/web", "--replicas=1")
	e.eventually("scaled down to web-0", func() (bool, error) {
		out := kubectl("get", "pods", "-l", "app=web", "-o", "name")
		return strings.TrimSpace(out) == "pod/web-0", fmt.Errorf("pods %q", out)
	})
	order.mu.Lock()
	created, deleted := strings.Join(order.created, ","), strings.Join(order.deleted, ",")
	order.mu.Unlock()
	if created != "web-0,web-1,web-2,web-3" || deleted != "web-3,web-2,web-1" {
		t.Errorf("created %s; deleted %s", created, deleted)
	}
	order.check(t)

	// A rolling update replaces pods highest first; history and undo go through
	// ControllerRevisions.
	kubectl("scale", "statefulset/web", "--replicas=3")
	kubectl("rollout", "status", "statefulset/web", "--timeout=120s")
	order.mu.Lock()
	order.updating = true
	order.mu.Unlock()
	kubectl("set", "image", "statefulset/web", "nginx=busybox:2")
	if out := kubectl("rollout", "status", "statefulset/web", "--timeout=120s"); !strings.Contains(out, "complete") {
		t.Fatalf("rollout status: %s", out)
	}
	images := func() string {
		return kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.containers[0].image} {end}")
	}
	e.eventually("all pods on busybox:2", func() (bool, error) {
		out := images()
		return out == "web-0=busybox:2 web-1=busybox:2 web-2=busybox:2 ", fmt.Errorf("%s", out)
	})
	if hist := kubectl("rollout", "history", "statefulset/web"); !strings.Contains(hist, "\n1 ") || !strings.Contains(hist, "\n2 ") {
		t.Errorf("rollout history:\n%s", hist)
	}
	kubectl("rollout", "undo", "statefulset/web")
	kubectl("rollout", "status", "statefulset/web", "--timeout=120s")
	e.eventually("all pods back on busybox:1", func() (bool, error) {
		out := images()
		return out == "web-0=busybox:1 web-1=busybox:1 web-2=busybox:1 ", fmt.Errorf("%s", out)
	})
	// A partition keeps the pods below it on the old revision.
	kubectl("patch", "statefulset/web", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}`)
	kubectl("set", "image", "statefulset/web", "nginx=busybox:3")
	e.eventually("only web-2 updated", func() (bool, error) {
		out := images()
		return out == "web-0=busybox:1 web-1=busybox:1 web-2=busybox:3 ", fmt.Errorf("%s", out)
	})
	order.check(t)
	if out := kubectl("get", "controllerrevisions", "--no-headers"); strings.Count(out, "statefulset.apps/web") != 3 {
		t.Errorf("controller revisions:\n%s", out)
	}
}
