package v1alpha1

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Hook is the component entry point a policy's module serves.
type Hook string

const (
	HookSchedulerFilter     Hook = "scheduler.filter"
	HookSchedulerScore      Hook = "scheduler.score"
	HookSchedulerPostFilter Hook = "scheduler.postFilter"
	HookAdmissionValidate   Hook = "admission.validate"
	HookAdmissionMutate     Hook = "admission.mutate"
	HookKubeletProbe        Hook = "kubelet.probe"
	HookKubeletPreStop      Hook = "kubelet.preStop"
)

// Hooks returns every hook, in the order of the pod's lifecycle (a new slice each call).
func Hooks() []Hook {
	return []Hook{HookAdmissionMutate, HookAdmissionValidate, HookSchedulerFilter, HookSchedulerPostFilter, HookSchedulerScore, HookKubeletProbe, HookKubeletPreStop}
}

// Component is the part of the cluster a hook runs in: "scheduler", "admission" (the API
// servers) or "kubelet". (A ComponentStatus names the API servers "apiserver": see
// ComponentOf.)
func (h Hook) Component() string {
	for i := 0; i < len(h); i++ {
		if h[i] == '.' {
			return string(h[:i])
		}
	}
	return ""
}

// Mode says whether a policy's verdicts take effect.
type Mode string

const (
	// ModeEnforce: the policy refuses, mutates, filters and scores (the default).
	ModeEnforce Mode = "Enforce"
	// ModeMonitor: the policy runs and its would-be verdicts are recorded, never applied.
	ModeMonitor Mode = "Monitor"
)

// FailurePolicy says what a failed call (trap, timeout, out of memory) means.
type FailurePolicy string

const (
	Fail   FailurePolicy = "Fail"
	Ignore FailurePolicy = "Ignore"
)

// Rollout says when the components that load a policy switch to a new revision of it.
type Rollout string

const (
	// RolloutProgressive: each component switches as soon as it has the new revision
	// loaded (the default).
	RolloutProgressive Rollout = "Progressive"
	// RolloutAllOrNothing: components compile the new revision and switch only once every
	// targeted one reports it compiled, then together.
	RolloutAllOrNothing Rollout = "AllOrNothing"
)

// Component values of a ComponentStatus and a WasmPolicyReport.
const (
	ComponentAPIServer = "apiserver"
	ComponentScheduler = "scheduler"
	ComponentKubelet   = "kubelet"
)

// ComponentOf is the component (ComponentAPIServer, ComponentScheduler, ComponentKubelet)
// that loads a hook's policies.
func (h Hook) ComponentOf() string {
	if c := h.Component(); c != "admission" {
		return c
	}
	return ComponentAPIServer
}

// PullPolicy says when the registry is asked which manifest a module's tag names.
type PullPolicy string

const (
	PullAlways       PullPolicy = "Always"
	PullIfNotPresent PullPolicy = "IfNotPresent"
	PullNever        PullPolicy = "Never"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WasmPolicy is a wasm policy module and the hook it serves, loaded by every component that
// runs the hook.
type WasmPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WasmPolicySpec   `json:"spec"`
	Status WasmPolicyStatus `json:"status,omitempty"`
}

// WasmPolicySpec is what a policy runs, where and how.
type WasmPolicySpec struct {
	Hook Hook `json:"hook"`
	// Mode is Enforce (the default) or Monitor.
	Mode   Mode         `json:"mode,omitempty"`
	Module ModuleSource `json:"module"`
	// Settings are the module's args: any JSON value, handed to wasmkube_init at load.
	Settings *runtime.RawExtension `json:"settings,omitempty"`
	// FailurePolicy is Fail (the default) or Ignore.
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
	// Timeout is the time limit of one call (default: the hook's component's).
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// MemoryLimit caps one instance's linear memory (64Ki to 4Gi; default 64Mi).
	MemoryLimit *resource.Quantity `json:"memoryLimit,omitempty"`
	// Pool is the number of instances, so of parallel calls (default: the component's).
	Pool *int32 `json:"pool,omitempty"`
	// Rollout is Progressive (the default) or AllOrNothing.
	Rollout Rollout `json:"rollout,omitempty"`
	// Revision, when set, asks for a rollback: the controller replaces the spec with the
	// one of that revision (wasmkube policy history lists them) and clears the field, as
	// a Deployment's rollbackTo did.
	Revision *int64 `json:"revision,omitempty"`

	// Exactly the section of the hook's component may be set.
	Scheduler *SchedulerHook `json:"scheduler,omitempty"`
	Admission *AdmissionHook `json:"admission,omitempty"`
	Kubelet   *KubeletHook   `json:"kubelet,omitempty"`
}

// ModuleSource says where the module comes from: exactly one of image and file.
type ModuleSource struct {
	// Image is REGISTRY/REPO:TAG or REGISTRY/REPO@sha256:...; a tag is resolved to a digest
	// once (status.digest) and every component fetches that digest.
	Image string `json:"image,omitempty"`
	// File is an absolute path that holds the module on every host that loads it.
	File string `json:"file,omitempty"`
	// SHA256 is the hex sha256 of the module's bytes; when set, a module with other bytes
	// is refused.
	SHA256 string `json:"sha256,omitempty"`
	// PullPolicy is Always, IfNotPresent or Never; default: Always for a tag "latest" or
	// none, else IfNotPresent.
	PullPolicy PullPolicy `json:"pullPolicy,omitempty"`
	// ImagePullSecrets name docker-config Secrets with the registry's credentials.
	ImagePullSecrets []corev1.SecretReference `json:"imagePullSecrets,omitempty"`
}

// SchedulerHook places a scheduler policy.
type SchedulerHook struct {
	// SchedulerName is the profile the plugin joins (default: default-scheduler).
	SchedulerName string `json:"schedulerName,omitempty"`
	// Weight of a Score (1 to 100; default 1).
	Weight *int32 `json:"weight,omitempty"`
	// ExtensionPoints enables only these of the module's points (PreFilter, Filter,
	// PostFilter, PreScore, Score); default: every point it exports.
	ExtensionPoints []string `json:"extensionPoints,omitempty"`
}

// AdmissionHook says which requests an admission policy sees, as a webhook's config does.
type AdmissionHook struct {
	// Rules: the policy sees only the requests they match (at least one).
	Rules             []Rule                `json:"rules"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	ObjectSelector    *metav1.LabelSelector `json:"objectSelector,omitempty"`
	// ValidationActions: Deny (default), Warn, Audit; Deny and Warn exclude each other.
	ValidationActions []string `json:"validationActions,omitempty"`
	// Capabilities are the resources the policy may read (get_object, list_objects).
	Capabilities []string `json:"capabilities,omitempty"`
	// MatchConditions are CEL expressions, as a ValidatingAdmissionPolicy's: the policy
	// sees a request only when every one is true; an expression that fails to evaluate
	// follows failurePolicy (Fail refuses the request, Ignore skips the policy).
	MatchConditions []admissionregistrationv1.MatchCondition `json:"matchConditions,omitempty"`
}

// Rule matches requests by API group, version, resource and operation.
type Rule struct {
	APIGroups   []string `json:"apiGroups"`
	APIVersions []string `json:"apiVersions"`
	Resources   []string `json:"resources"`
	// Operations: CREATE, UPDATE, DELETE, CONNECT or *.
	Operations []string `json:"operations"`
}

// KubeletHook says which pods and hosts a probe or preStop policy serves.
type KubeletHook struct {
	// HookName is the name pods ask for.
	HookName string `json:"hookName"`
	// NodeSelector picks the hosts whose kubelet loads the policy (default: every host).
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// Capabilities are the host functions beyond the sandbox the module may import
	// (pod-network).
	Capabilities []string `json:"capabilities,omitempty"`
}

// Phase is where one component is with a policy's current generation.
type Phase string

const (
	PhasePending  Phase = "Pending"
	PhaseFetching Phase = "Fetching"
	// PhaseStaged: rollout AllOrNothing: the component has the generation compiled,
	// checked against the ABI and smoke-called, held out of force until the controller
	// releases it (status.releasedGeneration); the last good revision stays in force.
	PhaseStaged Phase = "Staged"
	PhaseActive Phase = "Active"
	PhaseFailed Phase = "Failed"
)

// WasmPolicyStatus is what the cluster made of the policy.
type WasmPolicyStatus struct {
	// ObservedGeneration is the generation the status speaks of.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Digest is the module's digest: for an image, the manifest digest (sha256:...) the
	// controller resolved spec.module.image to for ResolvedGeneration, which is what every
	// component fetches; for a file, the sha256 of the bytes every component reports.
	Digest string `json:"digest,omitempty"`
	// ResolvedGeneration is the generation Digest was resolved for (image modules): a
	// component loads generation G of an image only once ResolvedGeneration is G.
	ResolvedGeneration int64 `json:"resolvedGeneration,omitempty"`
	// ResolvedImage is the spec.module.image Digest was resolved from: a later generation
	// with the same image keeps the digest without asking the registry again, unless its
	// pullPolicy is Always.
	ResolvedImage string `json:"resolvedImage,omitempty"`
	// ReleasedGeneration (rollout AllOrNothing) is the last generation every targeted
	// component reported Staged: the components put it in force when they see it.
	ReleasedGeneration int64 `json:"releasedGeneration,omitempty"`
	// ReadyComponents of TargetedComponents have the current generation Active.
	ReadyComponents    int32 `json:"readyComponents,omitempty"`
	TargetedComponents int32 `json:"targetedComponents,omitempty"`
	// Components has one entry per API server, scheduler or kubelet that should load it.
	Components []ComponentStatus `json:"components,omitempty"`
	// Conditions: Ready, Degraded.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Revision is the number of the revision the spec is (its ControllerRevision,
	// wasmkube policy history).
	Revision int64 `json:"revision,omitempty"`
}

// ComponentStatus is one component's report on the policy.
type ComponentStatus struct {
	// Name of the component instance (an API server's identity, a scheduler's, a node's).
	Name string `json:"name"`
	// Component is apiserver, scheduler or kubelet.
	Component          string `json:"component"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	Digest             string `json:"digest,omitempty"`
	Phase              Phase  `json:"phase"`
	// Mode is the mode the component runs the generation in (Enforce or Monitor).
	Mode               Mode        `json:"mode,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WasmPolicyList is a list of WasmPolicies.
type WasmPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WasmPolicy `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WasmPolicyReport is one component's report on one policy: what it has loaded and why
// not. Each API server, scheduler and kubelet writes only its own reports (one object per
// policy it loads), so a change costs each component at most one write and no component
// rewrites an object others write; a controller rolls them up into the WasmPolicy's status.
type WasmPolicyReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Policy is the WasmPolicy's name.
	Policy string `json:"policy"`
	// Status is the component's status for it.
	Status ComponentStatus `json:"status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WasmPolicyReportList is a list of WasmPolicyReports.
type WasmPolicyReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WasmPolicyReport `json:"items"`
}
