// Every scheduler runner of the SDK, for sdk_test.go, which runs the Rust SDK's case file
// sdk/rust/testdata/sched/cases.yaml on it: the same plugin as sdk/rust/testdata/sched.
// PreFilter skips pods labelled skip=yes and restricts to the node the pod's `only`
// annotation names; Filter rejects nodes labelled bad (Unschedulable) or gone
// (UnschedulableAndUnresolvable); PostFilter nominates the first Unschedulable node; Score
// is the node's `score` label (a raw score, any i64); NormalizeScore is min-max.
import {
  Node, Nodes, Pod, Status, UNSCHEDULABLE, nominate, normalizeMinMax, restrictTo, runFilter,
  runNormalizeScore, runPostfilter, runPrefilter, runPrescore, runScore, scoreError, state,
} from "../../assembly";
export { wasmkube_abi_version } from "../../assembly";

function prefilter(pod: Pod): Status {
  if (pod.label("skip") == "yes") return Status.skip();
  let only = pod.annotation("only");
  if (only != null) restrictTo(only);
  state.setString("prefilter", "ran");
  return Status.OK;
}

function filter(pod: Pod, node: Node): Status {
  if (node.label("bad") != null) return Status.reject("node is bad");
  if (node.label("gone") != null) return Status.unresolvable("node is gone");
  // PreFilter ran in this cycle: its state is readable here.
  return state.getString("prefilter") == "ran" ? Status.OK : Status.error("no prefilter state");
}

function postfilter(pod: Pod, nodes: Nodes): Status {
  for (let i = 0; i < nodes.length; i++) {
    let n = nodes.at(i);
    if (n.filterCode() == UNSCHEDULABLE) {
      nominate(n.name());
      return Status.OK;
    }
  }
  return Status.reject("nothing to nominate");
}

function prescore(pod: Pod, nodes: Nodes): Status {
  return nodes.length == 0 ? Status.skip() : Status.OK;
}

function score(pod: Pod, node: Node): i64 {
  let s = node.label("score");
  if (s == null) return 0;
  let v = I64.parseInt(s);
  if (v.toString() != s) return scoreError("label score: not an integer");
  return v;
}

export function wasmkube_prefilter(): i32 { return runPrefilter(prefilter); }
export function wasmkube_filter(count: i32): i32 { return runFilter(count, filter); }
export function wasmkube_postfilter(count: i32): i32 { return runPostfilter(count, postfilter); }
export function wasmkube_prescore(count: i32): i32 { return runPrescore(count, prescore); }
export function wasmkube_score(count: i32): i32 { return runScore(count, score); }
export function wasmkube_normalizescore(count: i32): i32 { return runNormalizeScore(count, normalizeMinMax); }
