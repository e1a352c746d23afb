package printers

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

var (
	now     = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	created = metav1.NewTime(now.Add(-90 * time.Minute))
	podGVK  = corev1.SchemeGroupVersion.WithKind("Pod")
)

func columnNames(t *metav1.Table, priority int32) []string {
	var names []string
	for _, c := range t.ColumnDefinitions {
		if c.Priority == priority {
			names = append(names, c.Name)
		}
	}
	return names
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestColumns(t *testing.T) {
	tests := []struct {
		gvk        schema.GroupVersionKind
		main, wide []string
	}{
		{podGVK, []string{"Name", "Ready", "Status", "Restarts", "Age"}, []string{"IP", "Node", "Nominated Node", "Readiness Gates"}},
		{corev1.SchemeGroupVersion.WithKind("Node"), []string{"Name", "Status", "Roles", "Age", "Version"}, []string{"Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"}},
		{corev1.SchemeGroupVersion.WithKind("Namespace"), []string{"Name", "Status", "Age"}, nil},
		{appsv1.SchemeGroupVersion.WithKind("Deployment"), []string{"Name", "Ready", "Up-to-date", "Available", "Age"}, []string{"Containers", "Images", "Selector"}},
		{appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), []string{"Name", "Desired", "Current", "Ready", "Age"}, []string{"Containers", "Images", "Selector"}},
		{corev1.SchemeGroupVersion.WithKind("Service"), []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"}, []string{"Selector"}},
		{corev1.SchemeGroupVersion.WithKind("Endpoints"), []string{"Name", "Endpoints", "Age"}, nil},
		{corev1.SchemeGroupVersion.WithKind("Event"), []string{"Last Seen", "Type", "Reason", "Object", "Message"}, []string{"Subobject", "Source", "First Seen", "Count", "Name"}},
		{coordinationv1.SchemeGroupVersion.WithKind("Lease"), []string{"Name", "Holder", "Age"}, nil},
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), []string{"Name", "Data", "Age"}, nil},
		{corev1.SchemeGroupVersion.WithKind("Secret"), []string{"Name", "Type", "Data", "Age"}, nil},
		{corev1.SchemeGroupVersion.WithKind("ServiceAccount"), []string{"Name", "Secrets", "Age"}, nil},
		{corev1.SchemeGroupVersion.WithKind("PodTemplate"), []string{"Name", "Age"}, nil}, // a kind without columns of its own
	}
	for _, tt := range tests {
		// An empty list still describes its columns.
		tbl, err := table(tt.gvk, nil, now)
		if err != nil {
			t.Fatal(err)
		}
		if got := columnNames(tbl, 0); !equalStrings(got, tt.main) {
			t.Errorf("%s columns = %v, want %v", tt.gvk.Kind, got, tt.main)
		}
		if got := columnNames(tbl, 1); !equalStrings(got, tt.wide) {
			t.Errorf("%s wide columns = %v, want %v", tt.gvk.Kind, got, tt.wide)
		}
		if tbl.Kind != "Table" || tbl.APIVersion != "meta.k8s.io/v1" || tbl.Rows == nil || len(tbl.Rows) != 0 {
			t.Errorf("%s: bad empty table %+v", tt.gvk.Kind, tbl)
		}
	}
}

func running(name string, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func TestPodRows(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: created},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodPending},
		}
	}
	tests := []struct {
		name                    string
		mutate                  func(p *corev1.Pod)
		ready, status, restarts string
		ip, node                string
	}{
		{"pending, unscheduled", func(p *corev1.Pod) {}, "0/2", "Pending", "0", "<none>", "<none>"},
		{"running", func(p *corev1.Pod) {
			p.Spec.NodeName = "node-1"
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.5", PodIPs: []corev1.PodIP{{IP: "10.244.0.5"}},
				ContainerStatuses: []corev1.ContainerStatus{running("a", true, 0), running("b", true, 0)}}
		}, "2/2", "Running", "0", "10.244.0.5", "node-1"},
		{"crash loop with restart time", func(p *corev1.Pod) {
			b := running("b", false, 5)
			b.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			b.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(now.Add(-5 * time.Minute))}}
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("a", true, 0), b}}
		}, "1/2", "CrashLoopBackOff", "5 (5m ago)", "<none>", "<none>"},
		{"completed", func(p *corev1.Pod) {
			done := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}
			done2 := done
			done2.Name = "b"
			p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{done, done2}}
		}, "0/2", "Completed", "0", "<none>", "<none>"},
		{"exit code without reason", func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "a", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}}}
		}, "0/2", "ExitCode:3", "0", "<none>", "<none>"},
		{"image pull", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}
		}, "0/2", "ErrImagePull", "0", "<none>", "<none>"},
		{"init running", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
		}, "0/2", "Init:0/1", "0", "<none>", "<none>"},
		{"init failed", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", RestartCount: 2,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
		}, "0/2", "Init:Error", "2", "<none>", "<none>"},
		{"init done, app initializing", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
		}, "0/2", "PodInitializing", "0", "<none>", "<none>"},
		{"sidecar counts as a container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning,
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "s", Ready: true, Started: ptr.To(true), RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
				ContainerStatuses:     []corev1.ContainerStatus{running("a", true, 0), running("b", true, 0)},
				Conditions:            []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}}
		}, "3/3", "Running", "1", "<none>", "<none>"},
		{"terminating", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now}
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("a", true, 0), running("b", true, 0)}}
		}, "2/2", "Terminating", "0", "<none>", "<none>"},
		{"node lost", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now}
			p.Status.Reason = "NodeLost"
		}, "0/2", "Unknown", "0", "<none>", "<none>"},
		{"scheduling gated", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
		}, "0/2", "SchedulingGated", "0", "<none>", "<none>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := base()
			tt.mutate(pod)
			tbl, err := table(podGVK, []runtime.Object{pod}, now)
			if err != nil {
				t.Fatal(err)
			}
			cells := tbl.Rows[0].Cells
			want := []any{"web", tt.ready, tt.status, tt.restarts, "90m", tt.ip, tt.node, "<none>", "<none>"}
			if len(cells) != len(want) {
				t.Fatalf("cells = %v", cells)
			}
			for i := range want {
				if cells[i] != want[i] {
					t.Errorf("column %s = %v, want %v", tbl.ColumnDefinitions[i].Name, cells[i], want[i])
				}
			}
			if tbl.Rows[0].Object.Object != pod {
				t.Errorf("row does not carry its object")
			}
		})
	}
}

func TestPodRowConditionsAndGates(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec:   corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, Conditions: []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionTrue}}}}
	tbl, err := table(podGVK, []runtime.Object{pod}, now)
	if err != nil {
		t.Fatal(err)
	}
	row := tbl.Rows[0]
	if row.Cells[4] != "<unknown>" || row.Cells[8] != "1/2" {
		t.Errorf("age/gates = %v/%v", row.Cells[4], row.Cells[8])
	}
	if len(row.Conditions) != 1 || row.Conditions[0].Type != metav1.RowCompleted {
		t.Errorf("succeeded pod row conditions = %v", row.Conditions)
	}
}

func TestNodeRows(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: metav1.NewTime(now.Add(-49 * time.Hour)),
			Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "", "kubernetes.io/role": "edge"}},
		Spec: corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.32.0-wasmkube", OSImage: "Debian GNU/Linux 12", KernelVersion: "6.1.0", ContainerRuntimeVersion: "containerd://1.6.20"},
		},
	}
	notReady := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}}
	unknown := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-3"}}
	tbl, err := table(corev1.SchemeGroupVersion.WithKind("Node"), []runtime.Object{node, notReady, unknown}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{"node-1", "Ready,SchedulingDisabled", "control-plane,edge,worker", "2d1h", "v1.32.0-wasmkube", "192.168.1.10", "<none>", "Debian GNU/Linux 12", "6.1.0", "containerd://1.6.20"},
		{"node-2", "NotReady", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		{"node-3", "Unknown", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
	}
	for r := range want {
		for c := range want[r] {
			if tbl.Rows[r].Cells[c] != want[r][c] {
				t.Errorf("row %d column %s = %v, want %v", r, tbl.ColumnDefinitions[c].Name, tbl.Rows[r].Cells[c], want[r][c])
			}
		}
	}
}

func TestOtherRows(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "nginx:1"}, {Name: "b", Image: "busybox"}}}}
	tests := []struct {
		kind schema.GroupVersionKind
		obj  runtime.Object
		want []any
	}{
		{corev1.SchemeGroupVersion.WithKind("Namespace"), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", CreationTimestamp: created}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			[]any{"default", "Active", "90m"}},
		{appsv1.SchemeGroupVersion.WithKind("Deployment"), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: created},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(3)), Selector: sel, Template: tmpl}, Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}},
			[]any{"web", "2/3", int64(3), int64(2), "90m", "a,b", "nginx:1,busybox", "app=web"}},
		{appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", CreationTimestamp: created},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(3)), Selector: sel, Template: tmpl}, Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 1}},
			[]any{"web-abc", int64(3), int64(3), int64(1), "90m", "a,b", "nginx:1,busybox", "app=web"}},
		{corev1.SchemeGroupVersion.WithKind("Service"), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: created},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.20"}, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}}}},
			[]any{"web", "NodePort", "10.96.0.20", "<none>", "80:30080/TCP,53/UDP", "90m", "app=web"}},
		{corev1.SchemeGroupVersion.WithKind("Service"), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.21", Ports: []corev1.ServicePort{{Port: 443, Protocol: corev1.ProtocolTCP}}}},
			[]any{"lb", "LoadBalancer", "10.96.0.21", "<pending>", "443/TCP", "<unknown>", "<none>"}},
		{corev1.SchemeGroupVersion.WithKind("Endpoints"), &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}, {IP: "fd00::3"}, {IP: "10.0.0.4"}}, Ports: []corev1.EndpointPort{{Port: 8080}}}}},
			[]any{"web", "10.0.0.1:8080,10.0.0.2:8080,[fd00::3]:8080 + 1 more...", "<unknown>"}},
		{corev1.SchemeGroupVersion.WithKind("Event"), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", FieldPath: "spec.containers{a}"}, Reason: "Pulled", Type: "Normal", Message: " pulled \n",
			Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}, FirstTimestamp: metav1.NewTime(now.Add(-10 * time.Minute)), LastTimestamp: metav1.NewTime(now.Add(-30 * time.Second)), Count: 4},
			[]any{"30s", "Normal", "Pulled", "pod/web", "spec.containers{a}", "kubelet, node-1", "pulled", "10m", int64(4), "web.1"}},
		{coordinationv1.SchemeGroupVersion.WithKind("Lease"), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: created}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-1")}},
			[]any{"node-1", "node-1", "90m"}},
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", CreationTimestamp: created}, Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": nil}},
			[]any{"cfg", int64(2), "90m"}},
	}
	for _, tt := range tests {
		tbl, err := table(tt.kind, []runtime.Object{tt.obj}, now)
		if err != nil {
			t.Fatal(err)
		}
		cells := tbl.Rows[0].Cells
		if len(cells) != len(tbl.ColumnDefinitions) || len(cells) != len(tt.want) {
			t.Fatalf("%s: %d cells, %d columns, want %d", tt.kind.Kind, len(cells), len(tbl.ColumnDefinitions), len(tt.want))
		}
		for i := range tt.want {
			if cells[i] != tt.want[i] {
				t.Errorf("%s column %s = %#v, want %#v", tt.kind.Kind, tbl.ColumnDefinitions[i].Name, cells[i], tt.want[i])
			}
		}
	}
}

func TestWrongType(t *testing.T) {
	_, err := Table(podGVK, []runtime.Object{&corev1.Node{}})
	if !errors.Is(err, ErrWrongType) {
		t.Fatalf("want ErrWrongType, got %v", err)
	}
}

func BenchmarkPodTable100(b *testing.B) {
	objs := make([]runtime.Object, 100)
	for i := range objs {
		objs[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("a", true, 0)}}}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := table(podGVK, objs, now); err != nil {
			b.Fatal(err)
		}
	}
}
