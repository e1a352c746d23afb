package v1alpha1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupName is the API group of the decision records.
const GroupName = "explorer.wasmkube.io"

// Version is the only version of the group.
const Version = "v1alpha1"

// APIVersion is GroupName/Version, the apiVersion of every object this package serves.
const APIVersion = GroupName + "/" + Version

// PathPrefix is where the API server serves the group.
const PathPrefix = "/apis/" + GroupName + "/" + Version

// Resource names (the last path element of a URL, and the resource RBAC sees for the
// write and timeline endpoints; the per-object endpoints are authorized as reading the
// pod, the node or the policy, see docs/explorer.md).
const (
	// ResourcePods: namespaces/{ns}/pods[/{name}]: PodDecisions of pods.
	ResourcePods = "pods"
	// ResourceRecords: records, namespaces/{ns}/records, records/{id}: the timeline.
	ResourceRecords = "records"
	// ResourcePolicies: policies[/{name}]: PolicyDecisions of policies.
	ResourcePolicies = "policies"
	// ResourceNodes: nodes/{name}: NodeDecisions, read from the node's kubelet.
	ResourceNodes = "nodes"
)

// RecordType says which of a Record's fields is set.
type RecordType string

const (
	TypeSchedulingAttempt RecordType = "SchedulingAttempt"
	TypeAdmissionRequest  RecordType = "AdmissionRequest"
	TypeHookRun           RecordType = "HookRun"
	TypeSwap              RecordType = "Swap"
)

// Component names, as in a WasmPolicy's status.components[].component.
const (
	ComponentScheduler = "scheduler"
	ComponentAPIServer = "apiserver"
	ComponentKubelet   = "kubelet"
)

// Record is one decision, as the timeline shows it. Exactly one of SchedulingAttempt,
// AdmissionRequest, HookRun and Swap is set, named by Type.
type Record struct {
	// ID is unique among the records one server holds: the ring's sequence number, which
	// grows by one per record. A watch resumes after an ID (resourceVersion=ID, or the
	// Last-Event-ID header of server-sent events).
	ID   uint64     `json:"id,string"`
	Type RecordType `json:"type"`
	// Component made the decision (scheduler, apiserver, kubelet); Source is which one:
	// the scheduler's name, the API server's identity, the node's name.
	Component string `json:"component"`
	Source    string `json:"source,omitempty"`
	// Time is when the decision was made (its end).
	Time metav1.MicroTime `json:"time"`
	// Summarized is set when the record was built in its cheaper form because its reader
	// was behind (the scheduler's push under load): a SchedulingAttempt without its
	// Matrix, Timings and RejectCounts (its counts, result, node and message are kept; an
	// attempt that did not schedule is always kept whole).
	Summarized bool `json:"summarized,omitempty"`
	// DroppedBefore is how many records of the same source were lost just before this
	// one (overwritten in the component's ring before they were sent).
	DroppedBefore uint64 `json:"droppedBefore,omitempty"`

	SchedulingAttempt *SchedulingAttempt `json:"schedulingAttempt,omitempty"`
	AdmissionRequest  *AdmissionRequest  `json:"admissionRequest,omitempty"`
	HookRun           *HookRun           `json:"hookRun,omitempty"`
	Swap              *Swap              `json:"swap,omitempty"`
}

// ObjectRef names the object a decision was about.
type ObjectRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// Module is a wasm plugin's module. A native (Go) plugin has no Module.
type Module struct {
	// Path is the module's file (file tier) or its OCI reference (API tier).
	Path string `json:"path,omitempty"`
	// Digest is the sha256 of the module's bytes ("sha256:...").
	Digest string `json:"digest,omitempty"`
}

// ---- scheduler ----

// Filter verdicts of a MatrixRow (the scheduler framework's codes, plus NotRun).
const (
	VerdictPass          = "Pass"
	VerdictUnschedulable = "Unschedulable"
	// VerdictUnresolvable is UnschedulableAndUnresolvable: preemption would not help.
	VerdictUnresolvable = "UnschedulableAndUnresolvable"
	VerdictError        = "Error"
	// VerdictSkip: the plugin's PreFilter said it had nothing to check for this pod.
	VerdictSkip = "Skip"
	// VerdictNotRun: an earlier plugin rejected the node, or the node was not evaluated
	// (enough feasible nodes were found first: percentageOfNodesToScore).
	VerdictNotRun = "NotRun"
)

// Results of a SchedulingAttempt.
const (
	ResultScheduled     = "Scheduled"
	ResultUnschedulable = "Unschedulable"
	ResultError         = "Error"
)

// SchedulingAttempt is one scheduling cycle of one pod.
type SchedulingAttempt struct {
	Pod ObjectRef `json:"pod"`
	// Attempt counts the pod's cycles in this scheduler, from 1.
	Attempt int    `json:"attempt"`
	Profile string `json:"profile"`
	// Result is Scheduled, Unschedulable or Error; Message is the FailedScheduling
	// message (upstream's "0/3 nodes are available: ...") or the error.
	Result  string `json:"result"`
	Message string `json:"message,omitempty"`
	// Node is the chosen node (Scheduled only).
	Node string `json:"node,omitempty"`
	// Nodes in the snapshot, evaluated by Filter, and feasible.
	Nodes     int `json:"nodes"`
	Evaluated int `json:"evaluated"`
	Feasible  int `json:"feasible"`
	// FilterPlugins and ScorePlugins are the columns of Matrix, in the profile's order.
	FilterPlugins []Plugin `json:"filterPlugins,omitempty"`
	ScorePlugins  []Plugin `json:"scorePlugins,omitempty"`
	// PreFilter is set when a PreFilter plugin rejected the pod for every node.
	PreFilter *PluginVerdict `json:"preFilter,omitempty"`
	// Matrix has one row per node, chosen node first, then feasible nodes by final
	// score, then rejected nodes by name; at most the ring's maxNodesPerAttempt rows
	// (TruncatedNodes says how many were left out).
	Matrix         []MatrixRow `json:"matrix,omitempty"`
	TruncatedNodes int         `json:"truncatedNodes,omitempty"`
	// RejectCounts groups every rejected node (also those left out of Matrix) by plugin
	// and reason: the 20 largest groups, largest first.
	RejectCounts []RejectCount `json:"rejectCounts,omitempty"`
	// PostFilter is what PostFilter (preemption) did for an unschedulable pod.
	PostFilter *PostFilterResult `json:"postFilter,omitempty"`
	// Timings is each plugin's time per extension point in this cycle (Filter and Score:
	// summed over nodes, so it may exceed the cycle's wall time when run in parallel).
	Timings []Timing `json:"timings,omitempty"`
	// DurationNanos is the cycle's wall time (queue pop to decision).
	DurationNanos int64 `json:"durationNanos"`
}

// Plugin is a column of the matrix.
type Plugin struct {
	Name string `json:"name"`
	// Weight of a Score plugin.
	Weight int64 `json:"weight,omitempty"`
	// Wasm is the module of a wasm plugin; nil for a native one.
	Wasm *Module `json:"wasm,omitempty"`
}

// MatrixRow is one node: a Filter verdict per FilterPlugins entry and a Score per
// ScorePlugins entry (Scores is empty for a node that did not pass Filter).
type MatrixRow struct {
	Node   string          `json:"node"`
	Chosen bool            `json:"chosen,omitempty"`
	Filter []FilterVerdict `json:"filter"`
	Scores []Score         `json:"scores,omitempty"`
	// Final is the sum of the weighted scores.
	Final int64 `json:"final"`
	// Rejected is set when the node was removed by a plugin outside the Filter columns
	// (a PreFilter's node set): every Filter verdict is then NotRun.
	Rejected *PluginVerdict `json:"rejected,omitempty"`
}

// FilterVerdict is one plugin's verdict on one node.
type FilterVerdict struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
}

// Score is one plugin's score of one node: as Score returned it, after NormalizeScore
// (0-100), and times the plugin's weight.
type Score struct {
	Raw        int64 `json:"raw"`
	Normalized int64 `json:"normalized"`
	Weighted   int64 `json:"weighted"`
}

// RejectCount is how many nodes one plugin rejected for one reason.
type RejectCount struct {
	Plugin string `json:"plugin"`
	Reason string `json:"reason,omitempty"`
	Count  int    `json:"count"`
}

// PluginVerdict is a plugin's status outside the matrix.
type PluginVerdict struct {
	Plugin  string `json:"plugin"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
}

// PostFilterResult is the outcome of PostFilter for an unschedulable pod.
type PostFilterResult struct {
	Plugin string `json:"plugin,omitempty"`
	// Verdict is Success (a node was nominated) or the failing code.
	Verdict       string `json:"verdict"`
	NominatedNode string `json:"nominatedNode,omitempty"`
	Message       string `json:"message,omitempty"`
}

// Timing is one plugin's time at one extension point.
type Timing struct {
	Point  string `json:"point"`
	Plugin string `json:"plugin"`
	Nanos  int64  `json:"nanos"`
}

// ---- admission ----

// Policy verdicts in an AdmissionRequest.
const (
	PolicyAllowed = "Allowed"
	PolicyDenied  = "Denied"
	PolicyMutated = "Mutated"
	// PolicySkipped: the policy did not match (SkipReason says why) or is not enforced.
	PolicySkipped = "Skipped"
	// PolicyFailed: the call failed (trap, timeout, unreachable webhook, CEL error);
	// FailurePolicy says what that meant for the request.
	PolicyFailed = "Failed"
	// PolicyWarned and PolicyAudited: a ValidatingAdmissionPolicy's validation failed, but
	// its binding's validationActions have no Deny: the client got a warning (Warn), or
	// the failure went to the audit annotations only (Audit).
	PolicyWarned  = "Warned"
	PolicyAudited = "Audited"
)

// AdmissionRequest is one request through the admission chain.
type AdmissionRequest struct {
	// UID is the admission request's uid (as webhooks see it).
	UID       string `json:"uid"`
	Operation string `json:"operation"`
	// Group/Version/Resource/SubResource of the request, and the object's kind.
	Group       string    `json:"group,omitempty"`
	Version     string    `json:"version"`
	Resource    string    `json:"resource"`
	SubResource string    `json:"subResource,omitempty"`
	Kind        string    `json:"kind,omitempty"`
	Object      ObjectRef `json:"object"`
	User        string    `json:"user,omitempty"`
	DryRun      bool      `json:"dryRun,omitempty"`
	// Allowed is the chain's verdict; DeniedBy names the policy that refused, and
	// Message is the refusal as the client saw it.
	Allowed  bool   `json:"allowed"`
	DeniedBy string `json:"deniedBy,omitempty"`
	Message  string `json:"message,omitempty"`
	// Policies in chain order (mutating, then validating), matched or not.
	Policies      []PolicyDecision `json:"policies"`
	DurationNanos int64            `json:"durationNanos"`
}

// PolicyDecision is one policy's part in an admission request.
type PolicyDecision struct {
	Name string `json:"name"`
	// Kind of policy: WasmPolicy, ValidatingAdmissionPolicy, MutatingAdmissionPolicy,
	// ValidatingWebhook, MutatingWebhook.
	Kind string `json:"kind"`
	// Phase is Mutating or Validating.
	Phase string  `json:"phase"`
	Wasm  *Module `json:"wasm,omitempty"`
	// Mode is Enforce or Monitor (a Monitor policy's verdict is recorded, never applied).
	Mode    string `json:"mode,omitempty"`
	Verdict string `json:"verdict"`
	// SkipReason says why a Skipped policy did not run: rules, namespaceSelector,
	// objectSelector, matchConditions, or an earlier denial.
	SkipReason       string            `json:"skipReason,omitempty"`
	Message          string            `json:"message,omitempty"`
	Warnings         []string          `json:"warnings,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	// Binding is the ValidatingAdmissionPolicyBinding or MutatingAdmissionPolicyBinding a
	// CEL policy ran through (one PolicyDecision per binding and param); Param names the
	// param object (namespace/name) it ran with, when the policy has a paramKind.
	Binding string `json:"binding,omitempty"`
	Param   string `json:"param,omitempty"`
	// ValidationActions are the binding's Deny, Warn and Audit: what was done with a
	// failed validation.
	ValidationActions []string `json:"validationActions,omitempty"`
	// Violations are a CEL policy's validations (or mutations) that failed, in spec order.
	Violations []Violation `json:"violations,omitempty"`
	// Patch is the JSON Patch (RFC 6902) a mutating policy returned (a
	// MutatingAdmissionPolicy's: the difference its mutations made, as such a patch).
	Patch json.RawMessage `json:"patch,omitempty"`
	// Before has one entry per operation of Patch: the value at the operation's path
	// (from, for move and copy) in the object just before this policy's patch; null where
	// the path was not set.
	Before []json.RawMessage `json:"before,omitempty"`
	// Failure is why the call failed; FailurePolicy (Fail or Ignore) is what was applied.
	Failure       string `json:"failure,omitempty"`
	FailurePolicy string `json:"failurePolicy,omitempty"`
	// Reinvoked: the policy ran in the chain's second mutating pass (a plugin after it
	// changed the object, so the mutating plugins run again, as upstream's reinvocation).
	Reinvoked     bool  `json:"reinvoked,omitempty"`
	DurationNanos int64 `json:"durationNanos"`
}

// Violation is one expression of a CEL policy that failed: a validation that was false
// or could not be evaluated, a matchCondition or a mutation that failed.
type Violation struct {
	// Field is the expression's place in the policy: spec.validations[1],
	// spec.mutations[0], spec.matchConditions[2].
	Field      string `json:"field"`
	Expression string `json:"expression,omitempty"`
	Message    string `json:"message"`
}

// ---- kubelet ----

// HookRun is one run of a kubelet hook (a wasm probe or preStop) for a container.
type HookRun struct {
	Pod       ObjectRef `json:"pod"`
	Node      string    `json:"node"`
	Container string    `json:"container"`
	// Hook is liveness, readiness, startup or preStop.
	Hook string `json:"hook"`
	// Handler is the plugin named by the spec's handler, with its module.
	Handler string  `json:"handler"`
	Wasm    *Module `json:"wasm,omitempty"`
	// Outcome is Success, Failure or Error (the call failed: trap, timeout, limits).
	Outcome       string `json:"outcome"`
	Message       string `json:"message,omitempty"`
	DurationNanos int64  `json:"durationNanos"`
}

// ---- swaps ----

// Swap results.
const (
	SwapApplied = "Applied"
	// SwapFailed: the new config or module was refused; the last good one stays.
	SwapFailed = "Failed"
)

// Swap is one config or policy reload in one component.
type Swap struct {
	// Policy names the policy (WasmPolicy name, or the plugin's name in the config
	// file); empty for a whole-config reload.
	Policy string `json:"policy,omitempty"`
	// Tier is file (the config file) or api (a WasmPolicy).
	Tier string `json:"tier"`
	// Generation is the WasmPolicy's metadata.generation the swap put in force (api tier).
	Generation int64 `json:"generation,omitempty"`
	// What changed, in words ("module sha256:ab.. -> sha256:cd..", "args", "profile default: Score plugins").
	Changes []string `json:"changes,omitempty"`
	From    *Module  `json:"from,omitempty"`
	To      *Module  `json:"to,omitempty"`
	Result  string   `json:"result"`
	Reason  string   `json:"reason,omitempty"`
}

// ---- responses ----

// RecordList is a list of records, oldest first. ListMeta.ResourceVersion is the newest
// ID the server holds: a watch from it misses nothing.
type RecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Record `json:"items"`
}

// PodDecisions is every record about one pod: its admission requests, its scheduling
// attempts and, when it has a node, the hook runs the node's kubelet holds.
type PodDecisions struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Node is the pod's node (spec.nodeName), empty while pending.
	Node string `json:"node,omitempty"`
	// ExplorerPath is the page of the pod, relative to the server's root.
	ExplorerPath string   `json:"explorerPath"`
	Records      []Record `json:"records"`
	// KubeletError is why the node's records could not be read (the other records are
	// still served).
	KubeletError string `json:"kubeletError,omitempty"`
}

// PodDecisionsList lists the pods of a namespace that have records.
type PodDecisionsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodSummary `json:"items"`
}

// PodSummary is a pod with records, and its latest scheduling result.
type PodSummary struct {
	Pod      ObjectRef        `json:"pod"`
	Records  int              `json:"records"`
	Last     metav1.MicroTime `json:"last"`
	Result   string           `json:"result,omitempty"`
	Node     string           `json:"node,omitempty"`
	Attempts int              `json:"attempts"`
}

// PolicyDecisions is one policy's swaps and how it decided, as one component saw it.
type PolicyDecisions struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Counts of decisions per component and verdict (scheduler: Pass, Unschedulable,
	// Scored; admission: the policy verdicts; kubelet: outcomes), over the records held.
	Counts []Count `json:"counts"`
	// Records are the policy's swaps and the decisions it took part in, oldest first.
	Records []Record `json:"records"`
}

// Count is how many decisions one component's policy took with one verdict.
type Count struct {
	Component string `json:"component"`
	Verdict   string `json:"verdict"`
	Count     int    `json:"count"`
}

// PolicyDecisionsList lists the policies that appear in records.
type PolicyDecisionsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PolicyDecisions `json:"items"`
}

// NodeDecisions is what a node's kubelet holds: its hook runs and its swaps.
type NodeDecisions struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Records           []Record `json:"records"`
}

// WatchEvent is one line of a watch (?watch=true). Type is always ADDED: records are
// never modified or deleted (a record that falls out of the ring is simply gone).
type WatchEvent struct {
	Type   string `json:"type"`
	Object Record `json:"object"`
}
