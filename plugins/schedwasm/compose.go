package schedwasm

import "github.com/wasmkube/wasmkube/plugins/wasmhost"

// plugin is a wasm module as a scheduler plugin. Its Go type has the methods of every
// scheduler extension point; ServesPoint tells the runtime which of them the module
// really exports (framework.PointSelector), so that a Score-only module is never called
// as a Filter.
type plugin struct {
	*core
	preFilterPart
	filterPart
	postFilterPart
	preScorePart
	scorePart
	reservePart
	permitPart
	preBindPart
	postBindPart
}

// points maps the runtime's extension point names to the entry points that serve them.
var points = map[string]*wasmhost.Kind{
	"PreFilter": PreFilter, "Filter": Filter, "PostFilter": PostFilter, "PreScore": PreScore, "Score": Score,
	"Permit": Permit, "PreBind": PreBind, "PostBind": PostBind,
}

// ServesPoint implements framework.PointSelector. Reserve is served by a module that
// exports wasmkube_reserve or wasmkube_unreserve.
func (p *plugin) ServesPoint(point string) bool {
	if point == "Reserve" {
		return p.Kinds().Has(Reserve) || p.Kinds().Has(Unreserve)
	}
	k, ok := points[point]
	return ok && p.Kinds().Has(k)
}

func compose(c *core) *plugin {
	return &plugin{core: c, preFilterPart: preFilterPart{c}, filterPart: filterPart{c}, postFilterPart: postFilterPart{c},
		preScorePart: preScorePart{c}, scorePart: scorePart{c}, reservePart: reservePart{c}, permitPart: permitPart{c},
		preBindPart: preBindPart{c}, postBindPart: postBindPart{c}}
}
