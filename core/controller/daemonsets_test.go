package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/controller/podstate"
)

const agentManifest = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  updateStrategy:
    rollingUpdate: {maxUnavailable: 1}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: agent
        image: busybox:1
`

// agentNodes maps node name to the images of the app's live pods there.
func (e *env) agentNodes(app string) map[string][]string {
	out := map[string][]string{}
	for _, p := range e.activePods("default", app) {
		if p.Spec.NodeName != "" {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p.Spec.Containers[0].Image)
		}
	}
	return out
}

func nodeNames(m map[string][]string) string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// unavailableWatch records the largest number of nodes that at once had no available pod
// of the app, among the nodes that had one when it started.
type unavailableWatch struct {
	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	worst int
}

func (e *env) watchUnavailable(app string, nodes []string) *unavailableWatch {
	list, err := e.client.CoreV1().Pods("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		e.t.Fatal(err)
	}
	u := &unavailableWatch{pods: map[string]*corev1.Pod{}}
	for i := range list.Items {
		u.pods[list.Items[i].Name] = &list.Items[i]
	}
	w, err := e.client.CoreV1().Pods("default").Watch(e.ctx, metav1.ListOptions{LabelSelector: "app=" + app, ResourceVersion: list.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
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
				u.mu.Lock()
				if ev.Type == watch.Deleted {
					delete(u.pods, p.Name)
				} else {
					u.pods[p.Name] = p
				}
				down := 0
				for _, n := range nodes {
					up := false
					for _, q := range u.pods {
						up = up || (q.Spec.NodeName == n && q.DeletionTimestamp == nil && podstate.IsReady(q))
					}
					if !up {
						down++
					}
				}
				u.worst = max(u.worst, down)
				u.mu.Unlock()
			}
		}
	}()
	return u
}

func TestDaemonSet(t *testing.T) {
	e := newEnv(t, envOpts{nodes: 3, ctrl: ctrlOpts()})
	kubectl := kubectlFor(t, e)
	manifest := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(manifest, []byte(agentManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl("apply", "-f", manifest)
	kubectl("rollout", "status", "daemonset/agent", "--timeout=120s")
	e.eventually("one pod per node", func() (bool, error) {
		m := e.agentNodes("agent")
		return nodeNames(m) == "hollow-0,hollow-1,hollow-2" && len(m["hollow-0"]) == 1 && len(m["hollow-1"]) == 1 && len(m["hollow-2"]) == 1, fmt.Errorf("%v", m)
	})
	if out := kubectl("get", "ds", "agent", "--no-headers"); !strings.HasPrefix(strings.Join(strings.Fields(out), " "), "agent 3 3 3 3 3") {
		t.Errorf("kubectl get ds: %q", out)
	}

	// A new node gets a pod; a node tainted NoExecute loses it; a deleted node's pod goes.
	e.hollow(e.ctx, e.wg, 1, "extra-", 0)
	e.eventually("pod on the new node", func() (bool, error) {
		m := e.agentNodes("agent")
		return len(m["extra-0"]) == 1 && len(m) == 4, fmt.Errorf("%v", m)
	})
	kubectl("taint", "node", "hollow-1", "dedicated=db:NoExecute")
	e.eventually("pod gone from the tainted node", func() (bool, error) {
		m := e.agentNodes("agent")
		return nodeNames(m) == "extra-0,hollow-0,hollow-2", fmt.Errorf("%v", m)
	})
	kubectl("taint", "node", "hollow-1", "dedicated=db:NoExecute-")
	kubectl("delete", "node", "extra-0")
	e.eventually("back on hollow-1, gone from extra-0", func() (bool, error) {
		m := e.agentNodes("agent")
		return nodeNames(m) == "hollow-0,hollow-1,hollow-2", fmt.Errorf("%v", m)
	})
	kubectl("rollout", "status", "daemonset/agent", "--timeout=120s")

	// Rolling update: never more than maxUnavailable (1) node without a ready pod.
	u := e.watchUnavailable("agent", []string{"hollow-0", "hollow-1", "hollow-2"})
	kubectl("set", "image", "daemonset/agent", "agent=busybox:2")
	kubectl("rollout", "status", "daemonset/agent", "--timeout=120s")
	e.eventually("every node on busybox:2", func() (bool, error) {
		m := e.agentNodes("agent")
		for _, n := range []string{"hollow-0", "hollow-1", "hollow-2"} {
			if len(m[n]) != 1 || m[n][0] != "busybox:2" {
				return false, fmt.Errorf("%v", m)
			}
		}
		return len(m) == 3, fmt.Errorf("%v", m)
	})
	u.mu.Lock()
	if u.worst > 1 {
		t.Errorf("%d nodes at once without a ready pod, maxUnavailable is 1", u.worst)
	}
	u.mu.Unlock()
	if hist := kubectl("rollout", "history", "daemonset/agent"); !strings.Contains(hist, "\n1 ") || !strings.Contains(hist, "\n2 ") {
		t.Errorf("rollout history:\n%s", hist)
	}
	kubectl("rollout", "undo", "daemonset/agent")
	kubectl("rollout", "status", "daemonset/agent", "--timeout=120s")
	e.eventually("every node back on busybox:1", func() (bool, error) {
		m := e.agentNodes("agent")
		for _, n := range []string{"hollow-0", "hollow-1", "hollow-2"} {
			if len(m[n]) != 1 || m[n][0] != "busybox:1" {
				return false, fmt.Errorf("%v", m)
			}
		}
		return true, nil
	})

	// nodeSelector: only labelled nodes.
	kubectl("label", "node", "hollow-2", "disk=ssd")
	kubectl("patch", "daemonset/agent", "-p", `{"spec":{"template":{"spec":{"nodeSelector":{"disk":"ssd"}}}}}`)
	e.eventually("only on hollow-2", func() (bool, error) {
		m := e.agentNodes("agent")
		return nodeNames(m) == "hollow-2", fmt.Errorf("%v", m)
	})
	if out := kubectl("get", "ds", "agent", "-o", "jsonpath={.status.desiredNumberScheduled}"); out != "1" {
		t.Errorf("desiredNumberScheduled %q", out)
	}
}
