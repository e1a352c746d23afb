// {{.Name}}: a wasmkube scheduler Reserve/Unreserve plugin in AssemblyScript, on the SDK
// in sdk/assemblyscript. A node labelled wasmkube.io/max-binding=N takes at most N pods
// between Reserve and the end of their binding cycle. It counts with the shared counters
// (one per node) and keeps a marker in cycle state, so that Unreserve (and PostBind) undo
// exactly what its Reserve did, and nothing when Reserve refused or never ran. Its
// queueing hint skips a Node Update (no node change lowers a count of pods in flight).
import {
  ClusterEvent, EVENT_ADD, EVENT_DELETE, EVENT_UPDATE, Node, Pod, QUEUE, SKIP_EVENT, Status,
  registerEvent, runEvents, runHint, runNodeNotice, runNodePoint, sharedAdd, state,
} from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

const maxBindingLabel = "wasmkube.io/max-binding";
const counted = "counted";

// The node's cap from its label: 1 to 9999, or 0 (no cap).
function cap(node: Node): i64 {
  let v = node.label(maxBindingLabel);
  if (v == null || v.length < 1 || v.length > 4) return 0;
  let n: i64 = 0;
  for (let i = 0; i < v.length; i++) {
    let c = v.charCodeAt(i);
    if (c < 48 || c > 57) return 0; // not a digit
    n = n * 10 + <i64>(c - 48);
  }
  return n;
}

function reserve(pod: Pod, node: Node): Status {
  let c = cap(node);
  if (c == 0) return Status.OK;
  let name = node.name();
  // The marker first: a Reserve stopped after it is undone by its Unreserve.
  state.setString(counted, "1");
  if (sharedAdd(name, 1) > c) {
    sharedAdd(name, -1);
    state.setString(counted, "0");
    return Status.reject("too many pods binding on this node");
  }
  return Status.OK;
}

// release takes the pod's 1 back if its Reserve counted it, once (Unreserve and PostBind).
function release(pod: Pod, node: Node): void {
  let mark = state.getString(counted);
  if (mark == null || mark != "1") return;
  sharedAdd(node.name(), -1);
  state.setString(counted, "0");
}

// The events that can help a pod this plugin refused: a pod leaving, a node added or changed.
function events(): void {
  registerEvent("Pod", EVENT_DELETE);
  registerEvent("Node", EVENT_ADD | EVENT_UPDATE);
}

function hint(pod: Pod, ev: ClusterEvent): i32 {
  if (ev.resource() == "Node" && ev.action() == EVENT_UPDATE) return SKIP_EVENT;
  return QUEUE;
}

export function wasmkube_reserve(): i32 {
  return runNodePoint(reserve);
}
export function wasmkube_unreserve(): i32 {
  return runNodeNotice(release);
}
export function wasmkube_postbind(): i32 {
  return runNodeNotice(release);
}
export function wasmkube_events(): i32 {
  return runEvents(events);
}
export function wasmkube_queueing_hint(): i32 {
  return runHint(hint);
}
