package admission

import (
	"errors"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/explorer"
)

// Recorder makes the decision explorer's record of each request that went through the
// chain: what the request was, every policy's part (as the policies report it through
// Attributes.RecordDecision), and the outcome. Built-in plugins report nothing; a refusal
// by one of them shows as a refused request without a denying policy.
type Recorder struct {
	rec *explorer.Recorder
}

// NewRecorder records into rec (nil: nothing is recorded).
func NewRecorder(rec *explorer.Recorder) *Recorder {
	if rec == nil {
		return nil
	}
	return &Recorder{rec: rec}
}

// SetRecorder makes the chain record every request it admits or refuses.
func (c *Chain) SetRecorder(r *Recorder) { c.rec = r }

// trace is what a request collects for its record.
type trace struct {
	start    time.Time
	policies []explorerv1.PolicyDecision
	// before is the object as JSON just before the first plugin changed it in place
	// (BeforeMutation); nil when nothing was changed.
	before []byte
	// first holds the first policies' parts: a request's list is made with its trace,
	// one allocation, not grown one part at a time.
	first [4]explorerv1.PolicyDecision
}

// Recording reports whether this request is recorded: a policy builds its
// PolicyDecision only then.
func (a *Attributes) Recording() bool { return a.trace != nil }

// RecordDecision adds one policy's part to the request's record (nothing when the
// request is not recorded). Policies report in the order they run.
func (a *Attributes) RecordDecision(d explorerv1.PolicyDecision) {
	if a.trace != nil {
		// the second pass is the mutating phase's; validation after it is not one
		d.Reinvoked = a.reinvoking && d.Phase == "Mutating"
		a.trace.policies = append(a.trace.policies, d)
	}
}

// begin starts the record of a request.
func (r *Recorder) begin(a *Attributes) {
	if r != nil {
		t := &trace{start: time.Now()}
		t.policies = t.first[:0]
		a.trace = t
	}
}

// finish hands the request's record to the recorder: the strings and the policies'
// decisions are copied here, the record (with the patches' old values) is built when it
// is read.
func (r *Recorder) finish(a *Attributes, err error) {
	if r == nil || a.trace == nil {
		return
	}
	t := a.trace
	a.trace = nil
	if !worthRecording(a, t, err) {
		return
	}
	end := time.Now()
	req := explorerv1.AdmissionRequest{
		Operation: string(a.Operation), Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource,
		SubResource: a.Subresource, Kind: a.Kind.Kind, User: a.User.Name, DryRun: a.DryRun,
		Object:        explorerv1.ObjectRef{Namespace: a.Namespace, Name: a.Name},
		Allowed:       err == nil,
		Policies:      t.policies,
		DurationNanos: end.Sub(t.start).Nanoseconds(),
	}
	for _, o := range []any{a.Object, a.OldObject} {
		if m, ok := o.(metav1.Object); ok && !reflect.ValueOf(m).IsNil() {
			if req.Object.Name == "" {
				req.Object.Name = m.GetName()
				if req.Object.Name == "" {
					req.Object.Name = m.GetGenerateName()
				}
			}
			req.Object.UID = string(m.GetUID())
			break
		}
	}
	if err != nil {
		req.Message = err.Error()
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			req.Message = st.Status().Message
		}
		req.DeniedBy = deniedBy(t.policies)
	}
	before := t.before
	r.rec.Record(func() explorerv1.Record {
		// Built when the record is read (explorer.Builder), once: the patches are replayed
		// then, not on the request's path. t.before and t.policies are not changed after
		// finish.
		if before != nil {
			fillBefore(before, req.Policies)
		}
		req.UID = string(uuid.NewUUID())
		return explorerv1.Record{Type: explorerv1.TypeAdmissionRequest, Time: metav1.NewMicroTime(end), AdmissionRequest: &req}
	})
}

// worthRecording keeps the requests a reader looks for: those a policy or webhook ran on
// (not only skipped), those refused, and the writes of pods themselves. The rest (Lease renewals,
// Events, status updates: most of a cluster's writes) would push those out of the ring.
func worthRecording(a *Attributes, t *trace, err error) bool {
	if err != nil || a.Resource.Group == "" && a.Resource.Resource == "pods" && a.Subresource == "" {
		return true
	}
	for _, d := range t.policies {
		if d.Verdict != explorerv1.PolicySkipped {
			return true
		}
	}
	return false
}

// deniedBy is the policy whose verdict stopped the request: the last that denied, or
// failed under failurePolicy Fail.
func deniedBy(ps []explorerv1.PolicyDecision) string {
	for i := len(ps) - 1; i >= 0; i-- {
		d := ps[i]
		if d.Mode == "Monitor" {
			continue
		}
		if d.Verdict == explorerv1.PolicyDenied || d.Verdict == explorerv1.PolicyFailed && d.FailurePolicy != "Ignore" {
			return d.Name
		}
	}
	return ""
}

// WantsDecisionRecorder is a plugin that records its own decisions besides the requests'
// (its config or policy swaps); the API server hands it its recorder when records are on.
type WantsDecisionRecorder interface {
	SetDecisionRecorder(*explorer.Recorder)
}
