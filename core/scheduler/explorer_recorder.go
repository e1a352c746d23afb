package scheduler

import "github.com/wasmkube/wasmkube/core/explorer"

// ExplorerRecorder is where the scheduler's decision records go (nil when off): the
// swaps of its API-tier WasmPolicies are recorded there too (plugins/wasmpolicy.RecordSwaps).
func (s *Scheduler) ExplorerRecorder() *explorer.Recorder { return s.explorer }
