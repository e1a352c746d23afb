package schedwasm

import (
	"encoding/binary"
	"strconv"

	"github.com/tetratelabs/wazero/api"

	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// nodeResourcesSize is the size of one node_resources record (10 little-endian i64).
const nodeResourcesSize = 80

// rangeFuncs are the run forms of node_resources and node_score (docs/abi.md section
// 4.3): a guest reads the records of a run of the batch's nodes, and hands over a run of
// scores, in one crossing each instead of one per node. A guest-to-host crossing costs
// about as much as the whole Filter of a simple plugin for one node (docs/benchmarks.md,
// "Where a wasm Filter+Score's time goes"), so the per-node forms made a Filter+Score
// pair three crossings a node. Both are optional: modules built before them import the
// per-node forms, which stay.
var rangeFuncs = []wasmhost.HostFunc{
	{Name: "node_resources_range", Params: sig(i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		first, count := int(int32(s[0])), int(int32(s[1]))
		if c == nil || c.nodeInfo(first) == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		n := max(0, min(count, len(c.Nodes)-first))
		s[0] = uint64(encodeNodeRange(c, first, n, wasmhost.Mem(mod, "node_resources_range", s[2], uint64(n)*nodeResourcesSize)))
	}},
	{Name: "node_scores", Params: sig(i32, i32, i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		first, count := int(int32(s[0])), int(int32(s[1]))
		switch {
		case c == nil || (c.Kind != Score && c.Kind != NormalizeScore):
			hc.SetGarbage("node_scores called from " + hc.Kind.String() + ", only Score and NormalizeScore may call it")
		case first < 0 || count < 0 || first+count > len(c.Scores):
			hc.SetGarbage("node_scores: nodes " + strconv.Itoa(first) + " .. " + strconv.Itoa(first+count-1) + " are outside the batch of " + strconv.Itoa(len(c.Scores)))
		default:
			in := wasmhost.Mem(mod, "node_scores", s[2], uint64(count)*8)
			for i := range count {
				c.Scores[first+i] = int64(binary.LittleEndian.Uint64(in[i*8:]))
			}
		}
	}},
}

// encodeNodeRange writes the node_resources records of nodes first .. first+n-1 of the
// call's batch into out, one after another; it returns n.
func encodeNodeRange(c *Call, first, n int, out []byte) int {
	for i := range n {
		encodeNodeResources(c.Nodes[first+i], out[i*nodeResourcesSize:])
	}
	return n
}
