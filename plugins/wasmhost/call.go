package wasmhost

import (
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Call is one entry-point call: the data the guest may pull (inputs) and what it returned
// (outputs). A Call is used by one goroutine; reuse it only after Do returned.
type Call struct {
	Kind Kind

	// Pod is the pod of the call. Requests is its effective request; when nil the host
	// computes it (callers that call many times per pod compute it once with
	// NewPodRequests and pass it).
	Pod      *v1.Pod
	Requests *PodRequests

	// Nodes is the batch of Filter, PreScore and Score.
	Nodes []*framework.NodeInfo
	// NodeNames is the batch of PostFilter and NormalizeScore (node names only).
	NodeNames []string
	// FilterCodes holds, for PostFilter, the Filter code that rejected NodeNames[i].
	FilterCodes []int32

	// State is the pod's cycle state (nil: the kind has none).
	State *framework.CycleState

	// Scores: input of NormalizeScore (raw scores) and output of Score and NormalizeScore.
	// The caller sizes it to the batch; the guest's node_score writes into it.
	Scores []int64

	// Outputs.

	// Code is the status code the entry point returned.
	Code int32
	// Reason is the reason set with status_reason.
	Reason string
	// Verdicts are the Filter verdicts set with node_status (accepted nodes have none).
	Verdicts []Verdict
	// PreFilterNodes are the node names set with prefilter_node (nil: all nodes).
	PreFilterNodes []string
	// Nominated is the node set with nominate.
	Nominated string

	garbage error
	logs    int
	dropped int
}

// Verdict is a Filter result for one node of the batch.
type Verdict struct {
	Index  int
	Code   int32
	Reason string
}

// count is the batch size passed to a batched entry point.
func (c *Call) count() int {
	if c.Kind == PostFilter || c.Kind == NormalizeScore {
		return len(c.NodeNames)
	}
	return len(c.Nodes)
}

// reset clears the outputs so that a Call can be reused.
func (c *Call) reset() {
	c.Code, c.Reason, c.Verdicts, c.PreFilterNodes, c.Nominated = 0, "", c.Verdicts[:0], nil, ""
	c.garbage, c.logs, c.dropped = nil, 0, 0
}

// setGarbage records the first contract violation of the call.
func (c *Call) setGarbage(msg string) {
	if c.garbage == nil {
		c.garbage = &garbageError{msg: msg}
	}
}

// nodeName returns the name of batch entry i, for kinds that have nodes or names.
func (c *Call) nodeName(i int) (string, bool) {
	if c.Kind == PostFilter || c.Kind == NormalizeScore {
		if i < 0 || i >= len(c.NodeNames) {
			return "", false
		}
		return c.NodeNames[i], true
	}
	n := c.node(i)
	if n == nil {
		return "", false
	}
	return n.Name, true
}

// node returns the v1.Node of batch entry i (nil when out of range or absent).
func (c *Call) node(i int) *v1.Node {
	if i < 0 || i >= len(c.Nodes) || c.Kind == PostFilter || c.Kind == NormalizeScore {
		return nil
	}
	return c.Nodes[i].Node()
}

func (c *Call) nodeInfo(i int) *framework.NodeInfo {
	if i < 0 || i >= len(c.Nodes) || c.Kind == PostFilter || c.Kind == NormalizeScore {
		return nil
	}
	return c.Nodes[i]
}

// checkResults validates what the guest returned: the code must be allowed for the kind,
// scores in range when range applies. It is a pure function of the Call.
func (c *Call) checkResults(normalized bool) error {
	if c.garbage != nil {
		return c.garbage
	}
	if !allowedCode(c.Kind, c.Code) {
		return &garbageError{msg: "entry point " + c.Kind.Export() + " returned status code " + itoa(int64(c.Code)) + ", not allowed for " + c.Kind.String()}
	}
	if c.Code != CodeSuccess {
		return nil
	}
	if (c.Kind == Score && !normalized) || c.Kind == NormalizeScore {
		for i, s := range c.Scores {
			if s < framework.MinNodeScore || s > framework.MaxNodeScore {
				name, _ := c.nodeName(i)
				return &garbageError{msg: "score " + itoa(s) + " for node " + name + " is outside [0, 100]"}
			}
		}
	}
	return nil
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	var b [24]byte
	i := len(b)
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	for u > 0 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// requests returns the pod's effective request, computing it on first use.
func (c *Call) requests() *PodRequests {
	if c.Requests == nil {
		c.Requests = NewPodRequests(c.Pod)
	}
	return c.Requests
}
