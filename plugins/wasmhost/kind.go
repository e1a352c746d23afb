package wasmhost

import "github.com/tetratelabs/wazero/api"

// Kind is a plugin entry point of ABI v1 (docs/abi.md section 1.3).
type Kind int

// The entry points, in the order of docs/abi.md.
const (
	PreFilter Kind = iota
	Filter
	PostFilter
	PreScore
	Score
	NormalizeScore
	Validate
	Mutate
	Probe
	PreStop
	numKinds
)

var kindInfo = [numKinds]struct {
	name    string // metric label and log key
	export  string
	batched bool // takes (count i32)
}{
	PreFilter:      {"prefilter", "wasmkube_prefilter", false},
	Filter:         {"filter", "wasmkube_filter", true},
	PostFilter:     {"postfilter", "wasmkube_postfilter", true},
	PreScore:       {"prescore", "wasmkube_prescore", true},
	Score:          {"score", "wasmkube_score", true},
	NormalizeScore: {"normalizescore", "wasmkube_normalizescore", true},
	Validate:       {"validate", "wasmkube_validate", false},
	Mutate:         {"mutate", "wasmkube_mutate", false},
	Probe:          {"probe", "wasmkube_probe", false},
	PreStop:        {"prestop", "wasmkube_prestop", false},
}

// String is the kind's name as used in metrics: "filter", "score", ...
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return "unknown"
	}
	return kindInfo[k].name
}

// Export is the name of the guest export that implements the kind.
func (k Kind) Export() string { return kindInfo[k].export }

func (k Kind) params() []api.ValueType {
	if kindInfo[k].batched {
		return []api.ValueType{api.ValueTypeI32}
	}
	return nil
}

// Kinds is a set of entry points.
type Kinds uint32

// Has reports whether k is in the set.
func (s Kinds) Has(k Kind) bool { return s&(1<<k) != 0 }

// List returns the kinds in the set, in ABI order.
func (s Kinds) List() []Kind {
	var out []Kind
	for k := Kind(0); k < numKinds; k++ {
		if s.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

// SchedulerKinds are the kinds the scheduler adapter drives.
const SchedulerKinds Kinds = 1<<PreFilter | 1<<Filter | 1<<PostFilter | 1<<PreScore | 1<<Score | 1<<NormalizeScore

// Status codes of ABI v1 (docs/abi.md section 1.3); they match framework.Code.
const (
	CodeSuccess                      int32 = 0
	CodeError                        int32 = 1
	CodeUnschedulable                int32 = 2
	CodeUnschedulableAndUnresolvable int32 = 3
	CodeSkip                         int32 = 5
)

// allowedCodes lists the status codes each kind may return.
func allowedCode(k Kind, code int32) bool {
	switch code {
	case CodeSuccess, CodeError:
		return true
	case CodeUnschedulable:
		return k == PreFilter || k == PostFilter || k == Validate || k == Mutate || k == Probe
	case CodeUnschedulableAndUnresolvable:
		return k == PreFilter
	case CodeSkip:
		return k == PreFilter || k == PreScore
	}
	return false
}
