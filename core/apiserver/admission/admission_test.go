package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type recorder struct {
	name string
	log  *[]string
	err  error
}

func (r recorder) Admit(_ context.Context, _ *Attributes) error {
	*r.log = append(*r.log, "admit:"+r.name)
	return r.err
}

type validator struct {
	name string
	log  *[]string
}

func (v validator) Validate(_ context.Context, _ *Attributes) error {
	*v.log = append(*v.log, "validate:"+v.name)
	return nil
}

func podAttrs(op Operation) *Attributes {
	return &Attributes{Operation: op, Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Namespace: "default", Name: "p", Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}}
}

func TestChainOrderAndErrors(t *testing.T) {
	var log []string
	c, err := NewChain(validator{"v1", &log}, recorder{name: "m1", log: &log}, recorder{name: "m2", log: &log}, validator{"v2", &log})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Admit(context.Background(), podAttrs(Create)); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(log) != "[admit:m1 admit:m2 validate:v1 validate:v2]" {
		t.Fatalf("order: %v", log)
	}
	log = nil
	c, _ = NewChain(recorder{name: "deny", log: &log, err: errors.New("policy says no")}, validator{"never", &log})
	err = c.Admit(context.Background(), podAttrs(Create))
	if !apierrors.IsForbidden(err) || fmt.Sprint(log) != "[admit:deny]" {
		t.Fatalf("denial: %v, ran %v", err, log)
	}
	if _, err := NewChain(42); err == nil {
		t.Fatal("a plugin with neither method was accepted")
	}
}

func TestDefaultTolerationSeconds(t *testing.T) {
	a := podAttrs(Create)
	pod := a.Object.(*corev1.Pod)
	pod.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	if err := (DefaultTolerationSeconds{Seconds: 60}).Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Tolerations) != 2 {
		t.Fatalf("tolerations: %+v", pod.Spec.Tolerations)
	}
	added := pod.Spec.Tolerations[1]
	if added.Key != corev1.TaintNodeNotReady || added.TolerationSeconds == nil || *added.TolerationSeconds != 60 || added.Effect != corev1.TaintEffectNoExecute {
		t.Fatalf("added toleration: %+v", added)
	}
	if pod.Spec.Tolerations[0].TolerationSeconds != nil {
		t.Fatal("an existing toleration was changed")
	}

	// Updates get them too (a replace from a manifest without them); status writes not.
	for _, c := range []struct {
		op   Operation
		sub  string
		want int
	}{{Update, "", 2}, {Update, "status", 0}, {Delete, "", 0}} {
		a := podAttrs(c.op)
		a.Subresource = c.sub
		if err := (DefaultTolerationSeconds{}).Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if got := len(a.Object.(*corev1.Pod).Spec.Tolerations); got != c.want {
			t.Errorf("%v %q: %d tolerations, want %d", c.op, c.sub, got, c.want)
		}
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	nss := map[string]*corev1.Namespace{
		"live":  {ObjectMeta: metav1.ObjectMeta{Name: "live"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		"dying": {ObjectMeta: metav1.ObjectMeta{Name: "dying"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
	}
	p := NamespaceLifecycle{Get: func(_ context.Context, name string) (*corev1.Namespace, error) {
		if ns, ok := nss[name]; ok {
			return ns, nil
		}
		return nil, fmt.Errorf("%w: %s", ErrNamespaceNotFound, name)
	}}
	for ns, check := range map[string]func(error) bool{
		"live":  func(err error) bool { return err == nil },
		"dying": apierrors.IsForbidden,
		"gone":  apierrors.IsNotFound,
	} {
		a := podAttrs(Create)
		a.Namespace = ns
		if err := p.Admit(context.Background(), a); !check(err) {
			t.Errorf("create in %s: %v", ns, err)
		}
	}
	a := podAttrs(Update)
	a.Namespace = "dying"
	if err := p.Admit(context.Background(), a); err != nil {
		t.Errorf("update in a terminating namespace must pass: %v", err)
	}

	// A namespace deletion is announced before it is written, so the cache behind Get can
	// read that namespace live until its watch catches up.
	var told []string
	p.Deleting = func(name string) { told = append(told, name) }
	del := &Attributes{Operation: Delete, Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "live"}
	if err := p.Admit(context.Background(), del); err != nil || len(told) != 1 || told[0] != "live" {
		t.Errorf("namespace delete: err %v, told %v", err, told)
	}
	pd := podAttrs(Delete)
	pd.Namespace = "live"
	if err := p.Admit(context.Background(), pd); err != nil || len(told) != 1 {
		t.Errorf("pod delete announced as a namespace deletion: err %v, told %v", err, told)
	}
}

func TestValidationAndNodeRestriction(t *testing.T) {
	v := Validation{Create: func(runtime.Object) field.ErrorList {
		return field.ErrorList{field.Required(field.NewPath("spec", "containers"), "")}
	}}
	err := v.Validate(context.Background(), podAttrs(Create))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.containers: Required value") {
		t.Fatalf("validation: %v", err)
	}
	node := UserInfo{Name: "system:node:n1", Groups: []string{NodesGroup}}
	a := podAttrs(Update)
	a.Subresource, a.User = "status", node
	a.OldObject = &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n2"}}
	if err := (NodeRestriction{}).Validate(context.Background(), a); !apierrors.IsForbidden(err) {
		t.Fatalf("status of another node's pod: %v", err)
	}
	a.OldObject = &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}}
	if err := (NodeRestriction{}).Validate(context.Background(), a); err != nil {
		t.Fatalf("status of own pod: %v", err)
	}
	if NodeName(UserInfo{Name: "system:node:n1"}) != "" {
		t.Fatal("a user outside system:nodes was treated as a node")
	}
}

// swapSource is a Source whose set is replaced while a request runs.
type swapSource struct {
	sets [][2]string // mutator and validator name of each set
	cur  int
	log  *[]string
}

// swapper is a mutator that replaces the source's set, as a reload in another goroutine
// would, in the middle of a request.
type swapper struct {
	recorder
	src *swapSource
}

func (s swapper) Admit(ctx context.Context, a *Attributes) error {
	s.src.cur = 1
	return s.recorder.Admit(ctx, a)
}

func (s *swapSource) Plugins() ([]MutationInterface, []ValidationInterface) {
	set := s.sets[s.cur]
	m := recorder{name: set[0], log: s.log}
	var mut MutationInterface = m
	if s.cur == 0 {
		mut = swapper{recorder: m, src: s}
	}
	return []MutationInterface{mut}, []ValidationInterface{validator{set[1], s.log}}
}

// A Source is read once per request, in its place in each phase: a swap during a request
// takes effect for the next one, never between its two phases.
func TestSourceReadOncePerRequest(t *testing.T) {
	var log []string
	src := &swapSource{sets: [][2]string{{"old-m", "old-v"}, {"new-m", "new-v"}}, log: &log}
	c, err := NewChain(recorder{name: "builtin-m", log: &log}, validator{"builtin-v", &log}, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Admit(context.Background(), podAttrs(Create)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, " "); got != "admit:builtin-m admit:old-m validate:builtin-v validate:old-v" {
		t.Fatalf("first request: %s", got)
	}
	log = nil
	if err := c.Admit(context.Background(), podAttrs(Create)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, " "); got != "admit:builtin-m admit:new-m validate:builtin-v validate:new-v" {
		t.Fatalf("next request: %s", got)
	}
}
