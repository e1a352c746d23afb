package kubelet

import (
	"encoding/json"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/explorer"
)

// The node's decision records (docs/explorer.md): its wasm hooks' runs and swaps, kept in
// a ring of explorer.DefaultSize and served at explorer.KubeletRecordsPath to the API
// server's node proxy, as logs are.

// explorerRecordsPath is where the records are served.
const explorerRecordsPath = explorer.KubeletRecordsPath

// decisionRecording is what hook plugins that record their decisions implement
// (plugins/nodewasm.Hooks).
type decisionRecording interface {
	SetDecisionRecorder(*explorer.Recorder)
}

// initExplorer gives the hook plugins a recorder when they record.
func (k *Kubelet) initExplorer() {
	dr, ok := k.opts.Hooks.(decisionRecording)
	if !ok || k.explorer != nil {
		return
	}
	k.explorer = explorer.NewRecorder(explorer.NewRing(0), explorerv1.ComponentKubelet, k.opts.NodeName)
	dr.SetDecisionRecorder(k.explorer)
}

// serveExplorerRecords answers the records the node holds, oldest first.
func (k *Kubelet) serveExplorerRecords(w http.ResponseWriter, r *http.Request) {
	list := &explorerv1.RecordList{TypeMeta: metav1.TypeMeta{Kind: "RecordList", APIVersion: explorerv1.APIVersion}, Items: []explorerv1.Record{}}
	if ring := k.explorer.Ring(); ring != nil {
		recs, last := ring.All()
		list.Items, list.ResourceVersion = recs, strconv.FormatUint(last, 10)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}
