// The SDK's core: status, args, state, logging, the pod, the nodes and the scheduler
// runners. index.ts re-exports it with the admission and kubelet parts.
import * as sys from "./sys";
import { again, beginCall, bytes, CallCache, kp, keyA, keyB, sbuf, scap, text, vp } from "./buf";

/** The version of docs/abi.md this SDK implements. */
export const ABI_VERSION: i32 = 1;

/** The ABI's version marker: re-export it from your entry file. */
export function wasmkube_abi_version(): i32 {
  return ABI_VERSION;
}

// Status codes (docs/abi.md 1.3). Code 2 has a name per kind.
export const SUCCESS: i32 = 0;
export const ERROR: i32 = 1;
export const UNSCHEDULABLE: i32 = 2;
export const DENIED: i32 = 2;
export const FAILURE: i32 = 2;
export const UNRESOLVABLE: i32 = 3;
export const SKIP: i32 = 5;

// Negative results of a read (lastResult()).
export const NOT_FOUND: i32 = -1;
export const UNAVAILABLE: i32 = -2;
export const FORBIDDEN: i32 = -3;

/** A verdict: a code and, unless it is a success, a reason. */
export class Status {
  constructor(public code: i32, public reason: string = "") {}

  /** Success. Shared: return it, do not change it. */
  static OK: Status = new Status(SUCCESS);

  /** Scheduler: Unschedulable, with the reason users read in "0/N nodes are available". */
  static reject(reason: string): Status { return new Status(UNSCHEDULABLE, reason); }
  /** Scheduler: UnschedulableAndUnresolvable (preemption cannot help). */
  static unresolvable(reason: string): Status { return new Status(UNRESOLVABLE, reason); }
  /** Admission: denied; the reason is the client's message. */
  static deny(reason: string): Status { return new Status(DENIED, reason); }
  /** Probe: failed; the reason is the Unhealthy event's message. */
  static failure(reason: string): Status { return new Status(FAILURE, reason); }
  /** The plugin cannot decide: its failurePolicy applies. */
  static error(reason: string): Status { return new Status(ERROR, reason); }
  /** PreFilter/PreScore: skip this plugin's Filter/Score for the pod. */
  static skip(): Status { return new Status(SKIP); }

  isSuccess(): bool { return this.code == SUCCESS; }
}

/** Sets the reason of the current entry point's own status (the runners do it for you). */
export function setReason(reason: string): void {
  if (reason.length == 0) return;
  let n = keyA(reason);
  sys.status_reason(kp, n);
}

/** Log levels. */
export const DEBUG: i32 = 0;
export const INFO: i32 = 1;
export const WARN: i32 = 2;
export const LOG_ERROR: i32 = 3;

/** Writes one line to the host's log, tagged with the plugin's name. */
export function log(level: i32, message: string): void {
  let n = keyA(message);
  sys.log(level, kp, n);
}

let argsRead = false;
let argsText: string = "";

/** The plugin's args as JSON text ("" when none were given); read from the host once. */
export function args(): string {
  if (!argsRead) {
    let n = sys.args(sbuf, scap);
    if (again(n)) n = sys.args(sbuf, scap);
    let s = text(n);
    argsText = s != null ? s : "";
    argsRead = true;
  }
  return argsText;
}

/** Cycle state: bytes kept for the current pod's scheduling cycle (docs/abi.md 4.2). */
export namespace state {
  /** The bytes stored under key in this cycle, or null (never set: lastResult() is -1). */
  export function get(key: string): Uint8Array | null {
    let k = keyA(key);
    let n = sys.state_get(kp, k, sbuf, scap);
    if (again(n)) n = sys.state_get(kp, k, sbuf, scap);
    return bytes(n);
  }
  /** The text stored under key, or null. */
  export function getString(key: string): string | null {
    let k = keyA(key);
    let n = sys.state_get(kp, k, sbuf, scap);
    if (again(n)) n = sys.state_get(kp, k, sbuf, scap);
    return text(n);
  }
  /** Stores value under key for the rest of the cycle; false when the kind has none. */
  export function set(key: string, value: Uint8Array): bool {
    let k = keyA(key);
    return sys.state_set(kp, k, value.dataStart, value.length) == 0;
  }
  /** Stores text under key. */
  export function setString(key: string, value: string): bool {
    let k = keyA(key);
    let v = keyB(value);
    return sys.state_set(kp, k, vp, v) == 0;
  }
}

/** The pod's effective requests (docs/abi.md 4.1): cpu in millicores, memory in bytes. */
export class PodRequests {
  milliCPU: i64 = 0;
  memory: i64 = 0;
  ephemeralStorage: i64 = 0;
  nonZeroMilliCPU: i64 = 0;
  nonZeroMemory: i64 = 0;
}

/** A node's resources (docs/abi.md 4.3): allocatable, and what its pods request. */
export class NodeResources {
  allocatableMilliCPU: i64 = 0;
  allocatableMemory: i64 = 0;
  allocatableEphemeralStorage: i64 = 0;
  allocatablePods: i64 = 0;
  requestedMilliCPU: i64 = 0;
  requestedMemory: i64 = 0;
  requestedEphemeralStorage: i64 = 0;
  /** How many pods the node runs. */
  requestedPods: i64 = 0;
  nonZeroRequestedMilliCPU: i64 = 0;
  nonZeroRequestedMemory: i64 = 0;
}

// Records are read into this static area, then copied into the classes above.
const record = memory.data(80, 8);

const podLabels = new CallCache();
const podAnnotations = new CallCache();

/** The pod being scheduled, admitted or probed. Labels and annotations are read from the
 * host once per call (a Filter asks for the same pod at every node); the other accessors
 * call the host on every use. */
export class Pod {
  /** metadata.name. */
  name(): string {
    let n = sys.pod_name(sbuf, scap);
    if (again(n)) n = sys.pod_name(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** metadata.namespace. */
  namespace(): string {
    let n = sys.pod_namespace(sbuf, scap);
    if (again(n)) n = sys.pod_namespace(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** The value of label key, or null when the pod has no such label. */
  label(key: string): string | null {
    if (podLabels.has(key)) return podLabels.value();
    let k = keyA(key);
    let n = sys.pod_label(kp, k, sbuf, scap);
    if (again(n)) n = sys.pod_label(kp, k, sbuf, scap);
    return podLabels.put(key, text(n));
  }
  /** The value of annotation key, or null. */
  annotation(key: string): string | null {
    if (podAnnotations.has(key)) return podAnnotations.value();
    let k = keyA(key);
    let n = sys.pod_annotation(kp, k, sbuf, scap);
    if (again(n)) n = sys.pod_annotation(kp, k, sbuf, scap);
    return podAnnotations.put(key, text(n));
  }
  /** The whole pod as Kubernetes JSON text (parse it with parseJSON), or null. */
  json(): string | null {
    let n = sys.pod_json(sbuf, scap);
    if (again(n)) n = sys.pod_json(sbuf, scap);
    return text(n);
  }
  /** The pod's effective requests, or null when there is no pod in this call. */
  requests(): PodRequests | null {
    if (sys.pod_requests(record) < 0) return null;
    let r = new PodRequests();
    r.milliCPU = load<i64>(record, 0);
    r.memory = load<i64>(record, 8);
    r.ephemeralStorage = load<i64>(record, 16);
    r.nonZeroMilliCPU = load<i64>(record, 24);
    r.nonZeroMemory = load<i64>(record, 32);
    return r;
  }
  /** The names of the extended resources the pod requests. */
  scalarNames(): string[] {
    let n = sys.pod_scalar_names(sbuf, scap);
    if (again(n)) n = sys.pod_scalar_names(sbuf, scap);
    return lines(text(n));
  }
  /** The pod's request of an extended resource (0 when none). */
  scalarRequest(name: string): i64 {
    let k = keyA(name);
    return sys.pod_scalar_request(kp, k);
  }
}

/** @internal Splits host text of `item\n` lines. */
export function lines(s: string | null): string[] {
  let out = new Array<string>();
  if (s == null) return out;
  let parts = s.split("\n");
  for (let i = 0; i < parts.length; i++) {
    if (parts[i].length > 0) out.push(parts[i]);
  }
  return out;
}

/** A node taint. */
export class Taint {
  constructor(public key: string, public value: string, public effect: string) {}
}

/** One node of the current batch, by index. The Node a Filter or Score callback gets is
 * reused for the next node: keep its index, not the object. */
export class Node {
  constructor(public index: i32) {}

  /** metadata.name (also in PostFilter and NormalizeScore). */
  name(): string {
    let n = sys.node_name(this.index, sbuf, scap);
    if (again(n)) n = sys.node_name(this.index, sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** The value of label key, or null when the node has no such label. */
  label(key: string): string | null {
    let k = keyA(key);
    let n = sys.node_label(this.index, kp, k, sbuf, scap);
    if (again(n)) n = sys.node_label(this.index, kp, k, sbuf, scap);
    return text(n);
  }
  /** The node's taints. */
  taints(): Taint[] {
    let n = sys.node_taints(this.index, sbuf, scap);
    if (again(n)) n = sys.node_taints(this.index, sbuf, scap);
    let ls = lines(text(n));
    let out = new Array<Taint>();
    for (let i = 0; i < ls.length; i++) {
      let line = ls[i];
      let c = line.lastIndexOf(":");
      let kv = c >= 0 ? line.substring(0, c) : line;
      let effect = c >= 0 ? line.substring(c + 1) : "";
      let e = kv.indexOf("=");
      out.push(new Taint(e >= 0 ? kv.substring(0, e) : kv, e >= 0 ? kv.substring(e + 1) : "", effect));
    }
    return out;
  }
  /** The node's resources, or null when the index is not in the batch. */
  resources(): NodeResources | null {
    if (sys.node_resources(this.index, record) < 0) return null;
    let r = new NodeResources();
    r.allocatableMilliCPU = load<i64>(record, 0);
    r.allocatableMemory = load<i64>(record, 8);
    r.allocatableEphemeralStorage = load<i64>(record, 16);
    r.allocatablePods = load<i64>(record, 24);
    r.requestedMilliCPU = load<i64>(record, 32);
    r.requestedMemory = load<i64>(record, 40);
    r.requestedEphemeralStorage = load<i64>(record, 48);
    r.requestedPods = load<i64>(record, 56);
    r.nonZeroRequestedMilliCPU = load<i64>(record, 64);
    r.nonZeroRequestedMemory = load<i64>(record, 72);
    return r;
  }
  /** The node's allocatable amount of an extended resource. */
  scalarAllocatable(name: string): i64 {
    let k = keyA(name);
    return sys.node_scalar(this.index, 0, kp, k);
  }
  /** What the node's pods request of an extended resource. */
  scalarRequested(name: string): i64 {
    let k = keyA(name);
    return sys.node_scalar(this.index, 1, kp, k);
  }
  /** The whole node as Kubernetes JSON text (a few KiB: prefer the accessors in Filter/Score). */
  json(): string | null {
    let n = sys.node_json(this.index, sbuf, scap);
    if (again(n)) n = sys.node_json(this.index, sbuf, scap);
    return text(n);
  }
  /** PostFilter only: the code Filter rejected the node with. */
  filterCode(): i32 {
    return sys.node_filter_code(this.index);
  }
}

/** The nodes of a batch (PreScore: feasible nodes; PostFilter: rejected ones). */
export class Nodes {
  constructor(public readonly length: i32) {}
  at(i: i32): Node { return new Node(i); }
}

/** The raw scores of a NormalizeScore call. */
export class Scores {
  constructor(public readonly length: i32) {}
  /** The raw score of node i. */
  get(i: i32): i64 { return sys.score_get(i); }
  /** Sets the final score of node i (in [0, 100]). */
  set(i: i32, score: i64): void { sys.node_score(i, score); }
  /** Node i (only its name is available). */
  node(i: i32): Node { return new Node(i); }
}

/** Scales the raw scores linearly: the highest becomes 100, the lowest 0 (all equal: 100). */
export function normalizeMinMax(pod: Pod, scores: Scores): Status {
  let n = scores.length;
  if (n == 0) return Status.OK;
  let lo = i64.MAX_VALUE, hi = i64.MIN_VALUE;
  for (let i = 0; i < n; i++) {
    let s = scores.get(i);
    if (s < lo) lo = s;
    if (s > hi) hi = s;
  }
  for (let i = 0; i < n; i++) {
    scores.set(i, hi == lo ? 100 : (scores.get(i) - lo) * 100 / (hi - lo));
  }
  return Status.OK;
}

/** PreFilter: adds a node to the set Filter evaluates for this pod. */
export function restrictTo(nodeName: string): void {
  let n = keyA(nodeName);
  sys.prefilter_node(kp, n);
}

/** PostFilter: nominates a node (return Status.OK after it). */
export function nominate(nodeName: string): void {
  let n = keyA(nodeName);
  sys.nominate(kp, n);
}

const thePod = new Pod();
const cursor = new Node(0);

/** @internal Reports st as the entry point's own status. */
export function finish(st: Status): i32 {
  if (st.code != SUCCESS) setReason(st.reason);
  return st.code;
}

/** wasmkube_init: run once per instance; a non-success status rejects the plugin's args. */
export function runInit(f: () => Status): i32 {
  beginCall();
  let st = f();
  if (st.code == SUCCESS) return 0;
  setReason(st.reason);
  return ERROR;
}

/** wasmkube_prefilter: f once per scheduling cycle. */
export function runPrefilter(f: (pod: Pod) => Status): i32 {
  beginCall();
  return finish(f(thePod));
}

/** wasmkube_filter: f for each node of the batch; a non-success status rejects the node. */
export function runFilter(count: i32, f: (pod: Pod, node: Node) => Status): i32 {
  beginCall();
  for (let i = 0; i < count; i++) {
    cursor.index = i;
    let st = f(thePod, cursor);
    if (st.code == SUCCESS) continue;
    let r = st.reason.length > 0 ? st.reason : "rejected";
    let n = keyA(r);
    sys.node_status(i, st.code, kp, n);
  }
  return SUCCESS;
}

/** wasmkube_postfilter: f when no node passed Filter; nominate() and return OK, or reject. */
export function runPostfilter(count: i32, f: (pod: Pod, nodes: Nodes) => Status): i32 {
  beginCall();
  return finish(f(thePod, new Nodes(count)));
}

/** wasmkube_prescore: f once per cycle with every feasible node. */
export function runPrescore(count: i32, f: (pod: Pod, nodes: Nodes) => Status): i32 {
  beginCall();
  return finish(f(thePod, new Nodes(count)));
}

// A Score callback reports an error through scoreError instead of a second result.
let scoreFailure: Status | null = null;

/** Score: fails the whole Score call with reason (return any score after calling it). */
export function scoreError(reason: string): i64 {
  scoreFailure = Status.error(reason);
  return 0;
}

/** wasmkube_score: f for each node of the batch (scores in [0, 100] without NormalizeScore). */
export function runScore(count: i32, f: (pod: Pod, node: Node) => i64): i32 {
  beginCall();
  scoreFailure = null;
  for (let i = 0; i < count; i++) {
    cursor.index = i;
    let s = f(thePod, cursor);
    let fail = scoreFailure;
    if (fail != null) return finish(fail);
    sys.node_score(i, s);
  }
  return SUCCESS;
}

/** wasmkube_normalizescore: f once with every raw score (or pass normalizeMinMax). */
export function runNormalizeScore(count: i32, f: (pod: Pod, scores: Scores) => Status): i32 {
  beginCall();
  return finish(f(thePod, new Scores(count)));
}
