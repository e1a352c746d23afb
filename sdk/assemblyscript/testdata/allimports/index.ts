// A module that calls every binding of the SDK, so that it imports every host function,
// and exports an entry point of every kind: sdk_test.go loads it into a host with every
// extension, which refuses any import whose signature is not the host's. Its init also
// echoes the args through parseJSON (as canonical JSON, in the rejection's reason) so the
// test can check the parser.
import {
  ClusterEvent, EVENT_ADD, QUEUE, SKIP_EVENT, allowWaiting, podUID, registerEvent, rejectWaiting,
  runEvents, runHint, runNodeNotice, runNodePoint, sharedAdd, sharedGet, signFragment, wait, waitingPods,
  Container, JSONKind, JSONValue, Node, Nodes, Pod, Request, Scores, Status, args, log, nominate,
  normalizeMinMax, parseJSON, restrictTo, runFilter, runInit, runMutate, runNormalizeScore,
  runPostfilter, runPrefilter, runPreStop, runPrescore, runProbe, runScore, runValidate, state,
} from "../../assembly";
export { wasmkube_abi_version } from "../../assembly";
import * as sys from "../../assembly/sys";

function canonical(v: JSONValue): string {
  switch (v.kind) {
    case JSONKind.Null: return "null";
    case JSONKind.Bool: return v.bool ? "true" : "false";
    case JSONKind.Number: return v.num.toString();
    case JSONKind.String: return "<" + v.str + ">";
    case JSONKind.Array: {
      let parts = new Array<string>();
      for (let i = 0; i < v.items.length; i++) parts.push(canonical(v.items[i]));
      return "[" + parts.join(",") + "]";
    }
  }
  let parts = new Array<string>();
  for (let i = 0; i < v.keys.length; i++) parts.push(v.keys[i] + ":" + canonical(v.values[i]));
  return "{" + parts.join(",") + "}";
}

function init(): Status {
  let a = args();
  if (a.length == 0) return Status.OK;
  let v = parseJSON(a);
  return Status.error(v == null ? "invalid" : canonical(v));
}

function podAll(p: Pod): void {
  p.name(); p.namespace(); p.label("a"); p.annotation("a"); p.json(); p.requests();
  p.scalarNames(); p.scalarRequest("x");
  state.get("k"); state.set("k", new Uint8Array(1)); log(1, "x");
}

function nodeAll(n: Node): void {
  n.name(); n.label("a"); n.taints(); n.resources(); n.scalarAllocatable("x");
  n.scalarRequested("x"); n.json(); n.filterCode();
  sys.node_resources_range(n.index, 1, memory.data(80));
}

function prefilter(p: Pod): Status { podAll(p); restrictTo("n"); return Status.OK; }
function filter(p: Pod, n: Node): Status { nodeAll(n); return Status.reject("no"); }
function postfilter(p: Pod, nodes: Nodes): Status { nodeAll(nodes.at(0)); nominate("n"); return Status.OK; }
function prescore(p: Pod, nodes: Nodes): Status { return Status.skip(); }
function score(p: Pod, n: Node): i64 { sys.node_scores(n.index, 1, memory.data(8)); return 1; }
function validate(r: Request): Status {
  r.operation(); r.kind(); r.resource(); r.name(); r.namespace(); r.user(); r.groups();
  r.podImages(); r.json(); r.objectJSON(); r.oldObjectJSON(); r.get("spec"); r.oldGet("spec"); r.objectLabel("a");
  r.objectAnnotation("a"); r.oldObjectLabel("a"); r.oldObjectAnnotation("a");
  r.getObject("configmaps", "x"); r.listObjects("configmaps"); r.warning("w");
  r.auditAnnotation("k", "v");
  return Status.OK;
}
function mutate(r: Request): Status { r.setPatch("[]"); return Status.OK; }
function probe(c: Container): Status {
  c.name(); c.probeKind(); c.podIP(); c.tcpConnect(80); c.httpGet(80, "/");
  c.responseBody(); c.responseHeader("x");
  return Status.OK;
}
function prestop(c: Container): Status { c.httpPost(80, "/", ""); c.sleep(1); return Status.OK; }

export function wasmkube_init(): i32 { return runInit(init); }
export function wasmkube_prefilter(): i32 { return runPrefilter(prefilter); }
export function wasmkube_filter(count: i32): i32 { return runFilter(count, filter); }
export function wasmkube_postfilter(count: i32): i32 { return runPostfilter(count, postfilter); }
export function wasmkube_prescore(count: i32): i32 { return runPrescore(count, prescore); }
export function wasmkube_score(count: i32): i32 { return runScore(count, score); }
export function wasmkube_normalizescore(count: i32): i32 { return runNormalizeScore(count, normalizeMinMax); }
export function wasmkube_validate(): i32 { return runValidate(validate); }
export function wasmkube_mutate(): i32 { return runMutate(mutate); }
export function wasmkube_probe(): i32 { return runProbe(probe); }
export function wasmkube_prestop(): i32 { return runPreStop(prestop); }

function reserve(p: Pod, n: Node): Status { podUID(); n.name(); sharedAdd("k", 1); sharedGet("k"); return Status.OK; }
function unreserve(p: Pod, n: Node): void {}
function permit(p: Pod, n: Node): Status {
  let w = waitingPods("g");
  if (w.length > 0) { allowWaiting(w[0]); rejectWaiting(w[0], "no"); }
  return wait(1000, "g");
}
function events(): void { registerEvent("Node", EVENT_ADD); }
function hint(p: Pod, e: ClusterEvent): i32 {
  e.resource(); e.objectJSON(); e.oldObjectJSON();
  return e.action() == EVENT_ADD ? QUEUE : SKIP_EVENT;
}
export function wasmkube_reserve(): i32 { return runNodePoint(reserve); }
export function wasmkube_unreserve(): i32 { return runNodeNotice(unreserve); }
export function wasmkube_permit(): i32 { return runNodePoint(permit); }
export function wasmkube_prebind(): i32 { return runNodePoint(reserve); }
export function wasmkube_postbind(): i32 { return runNodeNotice(unreserve); }
export function wasmkube_events(): i32 { return runEvents(events); }
export function wasmkube_queueing_hint(): i32 { return runHint(hint); }
export function wasmkube_sign(): i32 { signFragment("requests", "100m"); return 0; }
