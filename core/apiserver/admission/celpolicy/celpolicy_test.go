package celpolicy_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/celpolicy"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
)

type source struct {
	mu  sync.Mutex
	set celpolicy.Set
}

func (s *source) Policies(context.Context) (celpolicy.Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set, nil
}

// put replaces the set, defaulted as the server would.
func (s *source) put(set celpolicy.Set) {
	for _, o := range set.Validating {
		defaults.Default(o)
	}
	for _, o := range set.ValidatingBindings {
		defaults.Default(o)
	}
	for _, o := range set.Mutating {
		defaults.Default(o)
	}
	for _, o := range set.MutatingBindings {
		defaults.Default(o)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set = set
}

// recorder keeps the last request's audit annotations (a validating plugin after the
// policies).
type recorder struct {
	mu    sync.Mutex
	audit map[string]string
}

func (r *recorder) Validate(_ context.Context, a *admission.Attributes) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.audit = map[string]string{}
	for k, v := range a.AuditAnnotations {
		r.audit[k] = v
	}
	return nil
}

func (r *recorder) get() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.audit
}

type warningFunc func(string)

func (f warningFunc) HandleWarningHeader(_ int, _ string, msg string) { f(msg) }

func ptr[T any](v T) *T { return &v }

var podRules = &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
	RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}}}

func pod(name, image string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
}

func vap(name string, paramKind *admissionregistrationv1.ParamKind, v ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{ParamKind: paramKind, MatchConstraints: podRules, Validations: v,
			FailurePolicy: ptr(admissionregistrationv1.Fail)}}
}

func binding(name, policy string, ref *admissionregistrationv1.ParamRef, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ParamRef: ref, ValidationActions: actions}}
}

// TestValidatingAdmissionPolicy: upstream's VAP behaviours through our chain: params
// from a ConfigMap named by the binding (and by selector), parameterNotFoundAction Deny,
// messageExpression, variables, Deny/Warn/Audit, auditAnnotations, failurePolicy on a
// paramKind the server does not serve.
func TestValidatingAdmissionPolicy(t *testing.T) {
	src, rec := &source{}, &recorder{}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(celpolicy.New(celpolicy.Config{Source: src, Default: defaults.Default}), rec))
	ctx := context.Background()
	var mu sync.Mutex
	var warnings []string
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = warningFunc(func(m string) { mu.Lock(); warnings = append(warnings, m); mu.Unlock() })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	create := func(p *corev1.Pod) error {
		mu.Lock()
		warnings = nil
		mu.Unlock()
		_, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		return err
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "banned", Labels: map[string]string{"kind": "banned"}},
		Data: map[string]string{"prefix": "evil/"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cmKind := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	policy := vap("no-banned", cmKind, admissionregistrationv1.Validation{
		Expression:        "object.spec.containers.all(c, !c.image.startsWith(variables.prefix))",
		MessageExpression: `"image " + object.spec.containers[0].image + " is banned by " + params.metadata.name`,
	})
	policy.Spec.Variables = []admissionregistrationv1.Variable{{Name: "prefix", Expression: "params.data.prefix"}}
	policy.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "first-image", ValueExpression: "string(object.spec.containers[0].image)"}}
	byName := &admissionregistrationv1.ParamRef{Name: "banned", Namespace: "default", ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction)}
	src.put(celpolicy.Set{Validating: []*admissionregistrationv1.ValidatingAdmissionPolicy{policy},
		ValidatingBindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("no-banned-b", "no-banned", byName, admissionregistrationv1.Deny)}})

	err = create(pod("bad", "evil/miner", nil))
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'no-banned' with binding 'no-banned-b' denied request: image evil/miner is banned by banned") {
		t.Fatalf("Deny with messageExpression: %v", err)
	}
	if err := create(pod("good", "busybox", nil)); err != nil {
		t.Fatalf("allowed pod: %v", err)
	}
	if got := rec.get()["no-banned/first-image"]; got != "busybox" {
		t.Errorf("auditAnnotations: %v", rec.get())
	}

	// Warn and Audit: admitted, with upstream's warning and audit annotation
	bySelector := &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kind": "banned"}}}
	src.put(celpolicy.Set{Validating: []*admissionregistrationv1.ValidatingAdmissionPolicy{policy},
		ValidatingBindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("warn-b", "no-banned", bySelector, admissionregistrationv1.Warn, admissionregistrationv1.Audit)}})
	if err := create(pod("warned", "evil/warned", nil)); err != nil {
		t.Fatalf("Warn/Audit: %v", err)
	}
	mu.Lock()
	w := strings.Join(warnings, "|")
	mu.Unlock()
	if !strings.Contains(w, "Validation failed for ValidatingAdmissionPolicy 'no-banned' with binding 'warn-b': image evil/warned is banned by banned") {
		t.Errorf("warnings %q", w)
	}
	if got := rec.get()["validation.policy.admission.k8s.io/validation_failure"]; !strings.Contains(got, `"policy":"no-banned"`) || !strings.Contains(got, `"binding":"warn-b"`) {
		t.Errorf("audit annotations %v", rec.get())
	}

	// the param is gone: parameterNotFoundAction Deny refuses
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "banned", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	src.put(celpolicy.Set{Validating: []*admissionregistrationv1.ValidatingAdmissionPolicy{policy},
		ValidatingBindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("no-banned-b", "no-banned", byName, admissionregistrationv1.Deny)}})
	var lastErr error
	for i := 0; i < 100; i++ { // the watch cache learns of the deletion
		if lastErr = create(pod("noparam", "busybox", nil)); lastErr != nil {
			break
		}
		_ = cs.CoreV1().Pods("default").Delete(ctx, "noparam", metav1.DeleteOptions{})
	}
	if lastErr == nil || !strings.Contains(lastErr.Error(), "no params found for policy binding with `Deny` parameterNotFoundAction") {
		t.Fatalf("missing param under Deny: %v", lastErr)
	}

	// a paramKind the server does not serve: a configuration error, judged by failurePolicy
	unknown := vap("unknown-param", &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Nope"},
		admissionregistrationv1.Validation{Expression: "true"})
	set := celpolicy.Set{Validating: []*admissionregistrationv1.ValidatingAdmissionPolicy{unknown},
		ValidatingBindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("unknown-b", "unknown-param",
			&admissionregistrationv1.ParamRef{Name: "x"}, admissionregistrationv1.Deny)}}
	src.put(set)
	if err := create(pod("fail", "busybox", nil)); err == nil || !strings.Contains(err.Error(), "failed to find resource referenced by paramKind") {
		t.Fatalf("Fail: %v", err)
	}
	unknown.Spec.FailurePolicy = ptr(admissionregistrationv1.Ignore)
	src.put(set)
	if err := create(pod("ignore", "busybox", nil)); err != nil {
		t.Fatalf("Ignore: %v", err)
	}
}

// TestMutatingAdmissionPolicy: a MAP adds a label, with an ApplyConfiguration and with a
// JSONPatch; a later ValidatingAdmissionPolicy sees it.
func TestMutatingAdmissionPolicy(t *testing.T) {
	src := &source{}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(celpolicy.New(celpolicy.Config{Source: src, Default: defaults.Default})))
	ctx := context.Background()
	mapRules := podRules
	apply := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "add-team"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: mapRules, FailurePolicy: ptr(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"team": "platform"}}}`}}}}}
	jp := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "add-tier"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: mapRules, FailurePolicy: ptr(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/metadata/labels/tier", value: "gold"}]`}}}}}
	requireTeam := vap("require-team", nil, admissionregistrationv1.Validation{Expression: `has(object.metadata.labels) && "team" in object.metadata.labels`, Message: "pods must carry label team"})
	src.put(celpolicy.Set{
		Mutating: []*admissionregistrationv1.MutatingAdmissionPolicy{apply, jp},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "add-team-b"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "add-team"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "add-tier-b"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "add-tier"}},
		},
		Validating:         []*admissionregistrationv1.ValidatingAdmissionPolicy{requireTeam},
		ValidatingBindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("require-team-b", "require-team", nil, admissionregistrationv1.Deny)},
	})
	p, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod("web", "busybox", map[string]string{"app": "web"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels["team"] != "platform" || p.Labels["tier"] != "gold" || p.Labels["app"] != "web" {
		t.Fatalf("labels %v", p.Labels)
	}

	// reinvocation: "a-copy" (IfNeeded) copies label source ("none" when missing), which
	// "b-source" sets after it ran: it is reinvoked and sees it (as upstream, only a policy
	// that ran in the first pass is reinvoked)
	cp := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "a-copy"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: mapRules,
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"copied": (has(object.metadata.labels) && "source" in object.metadata.labels) ? object.metadata.labels["source"] : "none"}}}`}}}}}
	set := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "b-source"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: mapRules,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"source": "b"}}}`}}}}}
	src.put(celpolicy.Set{
		Mutating: []*admissionregistrationv1.MutatingAdmissionPolicy{cp, set},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "a-copy-b"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "a-copy"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b-source-b"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "b-source"}},
		}})
	p, err = srv.Client.CoreV1().Pods("default").Create(ctx, pod("reinvoked", "busybox", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels["source"] != "b" || p.Labels["copied"] != "b" {
		t.Fatalf("reinvocation: labels %v", p.Labels)
	}
}

// TestPolicyCostAndCompilation: an expression over the runtime cost budget refuses under
// failurePolicy Fail; a policy whose CEL does not compile is refused when written (422
// naming the field).
func TestPolicyCostAndCompilation(t *testing.T) {
	src := &source{}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(celpolicy.New(celpolicy.Config{Source: src, Default: defaults.Default})))
	ctx := context.Background()
	ten := "[0,1,2,3,4,5,6,7,8,9]"
	expensive := ten + ".all(a, " + ten + ".all(b, " + ten + ".all(c, " + ten + ".all(d, " + ten + ".all(e, " + ten + ".all(f, a+b+c+d+e+f >= 0))))))"
	src.put(celpolicy.Set{Validating: []*admissionregistrationv1.ValidatingAdmissionPolicy{vap("expensive", nil, admissionregistrationv1.Validation{Expression: expensive})},
		ValidatingBindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("expensive-b", "expensive", nil, admissionregistrationv1.Deny)}})
	_, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod("costly", "busybox", nil), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "cost") {
		t.Fatalf("an expression over the cost limit: %v", err)
	}
	bad := vap("bad", nil, admissionregistrationv1.Validation{Expression: "object.metadata.name =="})
	_, err = srv.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.validations[0].expression: Invalid value: "object.metadata.name ==": compilation failed`) {
		t.Fatalf("a policy that does not compile: %v", err)
	}
}
