package schedwasm

import "github.com/wasmkube/wasmkube/plugins/wasmhost"

// The runtime discovers extension points by type assertion, so a wasm plugin must be a
// type that implements exactly the entry points its module exports: one struct per
// combination.

type plugin10000 struct {
	*core
	preFilterPart
}

type plugin01000 struct {
	*core
	filterPart
}

type plugin11000 struct {
	*core
	preFilterPart
	filterPart
}

type plugin00100 struct {
	*core
	postFilterPart
}

type plugin10100 struct {
	*core
	preFilterPart
	postFilterPart
}

type plugin01100 struct {
	*core
	filterPart
	postFilterPart
}

type plugin11100 struct {
	*core
	preFilterPart
	filterPart
	postFilterPart
}

type plugin00010 struct {
	*core
	preScorePart
}

type plugin10010 struct {
	*core
	preFilterPart
	preScorePart
}

type plugin01010 struct {
	*core
	filterPart
	preScorePart
}

type plugin11010 struct {
	*core
	preFilterPart
	filterPart
	preScorePart
}

type plugin00110 struct {
	*core
	postFilterPart
	preScorePart
}

type plugin10110 struct {
	*core
	preFilterPart
	postFilterPart
	preScorePart
}

type plugin01110 struct {
	*core
	filterPart
	postFilterPart
	preScorePart
}

type plugin11110 struct {
	*core
	preFilterPart
	filterPart
	postFilterPart
	preScorePart
}

type plugin00001 struct {
	*core
	scorePart
}

type plugin10001 struct {
	*core
	preFilterPart
	scorePart
}

type plugin01001 struct {
	*core
	filterPart
	scorePart
}

type plugin11001 struct {
	*core
	preFilterPart
	filterPart
	scorePart
}

type plugin00101 struct {
	*core
	postFilterPart
	scorePart
}

type plugin10101 struct {
	*core
	preFilterPart
	postFilterPart
	scorePart
}

type plugin01101 struct {
	*core
	filterPart
	postFilterPart
	scorePart
}

type plugin11101 struct {
	*core
	preFilterPart
	filterPart
	postFilterPart
	scorePart
}

type plugin00011 struct {
	*core
	preScorePart
	scorePart
}

type plugin10011 struct {
	*core
	preFilterPart
	preScorePart
	scorePart
}

type plugin01011 struct {
	*core
	filterPart
	preScorePart
	scorePart
}

type plugin11011 struct {
	*core
	preFilterPart
	filterPart
	preScorePart
	scorePart
}

type plugin00111 struct {
	*core
	postFilterPart
	preScorePart
	scorePart
}

type plugin10111 struct {
	*core
	preFilterPart
	postFilterPart
	preScorePart
	scorePart
}

type plugin01111 struct {
	*core
	filterPart
	postFilterPart
	preScorePart
	scorePart
}

type plugin11111 struct {
	*core
	preFilterPart
	filterPart
	postFilterPart
	preScorePart
	scorePart
}

// compose returns the plugin type for the module's scheduler entry points; nil when it
// exports none.
func compose(c *core, k wasmhost.Kinds) any {
	mask := 0
	if k.Has(PreFilter) {
		mask |= 1 << 0
	}
	if k.Has(Filter) {
		mask |= 1 << 1
	}
	if k.Has(PostFilter) {
		mask |= 1 << 2
	}
	if k.Has(PreScore) {
		mask |= 1 << 3
	}
	if k.Has(Score) {
		mask |= 1 << 4
	}
	switch mask {
	case 1:
		return &plugin10000{core: c, preFilterPart: preFilterPart{c}}
	case 2:
		return &plugin01000{core: c, filterPart: filterPart{c}}
	case 3:
		return &plugin11000{core: c, preFilterPart: preFilterPart{c}, filterPart: filterPart{c}}
	case 4:
		return &plugin00100{core: c, postFilterPart: postFilterPart{c}}
	case 5:
		return &plugin10100{core: c, preFilterPart: preFilterPart{c}, postFilterPart: postFilterPart{c}}
	case 6:
		return &plugin01100{core: c, filterPart: filterPart{c}, postFilterPart: postFilterPart{c}}
	case 7:
		return &plugin11100{core: c, preFilterPart: preFilterPart{c}, filterPart: filterPart{c}, postFilterPart: postFilterPart{c}}
	case 8:
		return &plugin00010{core: c, preScorePart: preScorePart{c}}
	case 9:
		return &plugin10010{core: c, preFilterPart: preFilterPart{c}, preScorePart: preScorePart{c}}
	case 10:
		return &plugin01010{core: c, filterPart: filterPart{c}, preScorePart: preScorePart{c}}
	case 11:
		return &plugin11010{core: c, preFilterPart: preFilterPart{c}, filterPart: filterPart{c}, preScorePart: preScorePart{c}}
	case 12:
		return &plugin00110{core: c, postFilterPart: postFilterPart{c}, preScorePart: preScorePart{c}}
	case 13:
		return &plugin10110{core: c, preFilterPart: preFilterPart{c}, postFilterPart: postFilterPart{c}, preScorePart: preScorePart{c}}
	case 14:
		return &plugin01110{core: c, filterPart: filterPart{c}, postFilterPart: postFilterPart{c}, preScorePart: preScorePart{c}}
	case 15:
		return &plugin11110{core: c, preFilterPart: preFilterPart{c}, filterPart: filterPart{c}, postFilterPart: postFilterPart{c}, preScorePart: preScorePart{c}}
	case 16:
		return &plugin00001{core: c, scorePart: scorePart{c}}
	case 17:
		return &plugin10001{core: c, preFilterPart: preFilterPart{c}, scorePart: scorePart{c}}
	case 18:
		return &plugin01001{core: c, filterPart: filterPart{c}, scorePart: scorePart{c}}
	case 19:
		return &plugin11001{core: c, preFilterPart: preFilterPart{c}, filterPart: filterPart{c}, scorePart: scorePart{c}}
	case 20:
		return &plugin00101{core: c, postFilterPart: postFilterPart{c}, scorePart: scorePart{c}}
	case 21:
		return &plugin10101{core: c, preFilterPart: preFilterPart{c}, postFilterPart: postFilterPart{c}, scorePart: scorePart{c}}
	case 22:
		return &plugin01101{core: c, filterPart: filterPart{c}, postFilterPart: postFilterPart{c}, scorePart: scorePart{c}}
	case 23:
		return &plugin11101{core: c, preFilterPart: preFilterPart{c}, filterPart: filterPart{c}, postFilterPart: postFilterPart{c}, scorePart: scorePart{c}}
	case 24:
		return &plugin00011{core: c, preScorePart: preScorePart{c}, scorePart: scorePart{c}}
	case 25:
		return &plugin10011{core: c, preFilterPart: preFilterPart{c}, preScorePart: preScorePart{c}, scorePart: scorePart{c}}
	case 26:
		return &plugin01011{core: c, filterPart: filterPart{c}, preScorePart: preScorePart{c}, scorePart: scorePart{c}}
	case 27:
		return &plugin11011{core: c, preFilterPart: preFilterPart{c}, filterPart: filterPart{c}, preScorePart: preScorePart{c}, scorePart: scorePart{c}}
	case 28:
		return &plugin00111{core: c, postFilterPart: postFilterPart{c}, preScorePart: preScorePart{c}, scorePart: scorePart{c}}
	case 29:
		return &plugin10111{core: c, preFilterPart: preFilterPart{c}, postFilterPart: postFilterPart{c}, preScorePart: preScorePart{c}, scorePart: scorePart{c}}
	case 30:
		return &plugin01111{core: c, filterPart: filterPart{c}, postFilterPart: postFilterPart{c}, preScorePart: preScorePart{c}, scorePart: scorePart{c}}
	case 31:
		return &plugin11111{core: c, preFilterPart: preFilterPart{c}, filterPart: filterPart{c}, postFilterPart: postFilterPart{c}, preScorePart: preScorePart{c}, scorePart: scorePart{c}}
	}
	return nil
}
