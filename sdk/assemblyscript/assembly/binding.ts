// The binding cycle and queueing hints (docs/abi.md 1.4 and 4.8): the chosen node, the
// plugin's shared counters, a Permit's wait and the pods it holds, and the events a hint
// is asked about.
import * as sys from "./sys";
import { again, beginCall, kp, keyA, keyB, sbuf, scap, text, vp } from "./buf";
import { Node, Pod, Status, finish } from "./core";

/** Permit: hold the pod (after wait()) until a later Permit allows it. */
export const WAIT: i32 = 4;

/** Event actions, a bit set. */
export const EVENT_ADD: i32 = 1;
export const EVENT_DELETE: i32 = 2;
export const EVENT_UPDATE: i32 = 4;

/** A hint's verdicts. */
export const QUEUE: i32 = 0;
export const SKIP_EVENT: i32 = 5;

const thePod = new Pod();
const chosen = new Node(0);

/** The pod's metadata.uid (what a Permit allows or rejects a waiting pod by). */
export function podUID(): string {
  let n = sys.pod_uid(sbuf, scap);
  if (again(n)) n = sys.pod_uid(sbuf, scap);
  let s = text(n);
  return s != null ? s : "";
}

/** Adds delta to the plugin's shared counter key and returns the new value. */
export function sharedAdd(key: string, delta: i64): i64 {
  let k = keyA(key);
  return sys.shared_add(kp, k, delta);
}

/** The plugin's shared counter key (0 when never set). */
export function sharedGet(key: string): i64 {
  let k = keyA(key);
  return sys.shared_get(kp, k);
}

/** Permit: hold the pod under group for at most timeoutMs (1..900000); return its status. */
export function wait(timeoutMs: i32, group: string): Status {
  let g = keyA(group);
  sys.permit_wait(timeoutMs, kp, g);
  return new Status(WAIT, "");
}

/** Permit: the UIDs of the pods this plugin holds under group. */
export function waitingPods(group: string): string[] {
  let g = keyA(group);
  let n = sys.waiting_pods(kp, g, sbuf, scap);
  if (again(n)) n = sys.waiting_pods(kp, g, sbuf, scap);
  let s = text(n);
  if (s == null || s.length == 0) return [];
  let lines = s.split("\n");
  lines.pop(); // after the last "\n"
  return lines;
}

/** Permit: releases a waiting pod from this plugin's wait; false when it does not hold it. */
export function allowWaiting(uid: string): bool {
  let u = keyA(uid);
  return sys.waiting_allow(kp, u) == 0;
}

/** Permit: rejects a waiting pod with reason; false when the plugin does not hold it. */
export function rejectWaiting(uid: string, reason: string): bool {
  let u = keyA(uid);
  let r = keyB(reason);
  return sys.waiting_reject(kp, u, vp, r) == 0;
}

/** wasmkube_events only: registers resource ("Node" or "Pod") with actions. */
export function registerEvent(resource: string, actions: i32): void {
  let r = keyA(resource);
  sys.register_event(kp, r, actions);
}

/** wasmkube_sign only (docs/abi.md 1.5): one part of the pod this plugin's verdicts read.
 * Export wasmkube_sign(): i32 { return runSign(f); } (or return 0 after the fragments, or
 * 2 for unsignable, after beginning the call as runSign does). */
export function signFragment(key: string, value: string): void {
  let k = keyA(key);
  let v = keyB(value);
  sys.sign_fragment(kp, k, vp, v);
}

/** The event a hint is asked about. */
export class ClusterEvent {
  /** "Node" or "Pod". */
  resource(): string {
    let n = sys.event_resource(sbuf, scap);
    if (again(n)) n = sys.event_resource(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** EVENT_ADD, EVENT_DELETE or EVENT_UPDATE. */
  action(): i32 {
    return sys.event_action();
  }
  /** The new object as JSON (for a Delete, the deleted one). */
  objectJSON(): string | null {
    let n = sys.event_object_json(sbuf, scap);
    if (again(n)) n = sys.event_object_json(sbuf, scap);
    return text(n);
  }
  /** The object before an Update as JSON, or null. */
  oldObjectJSON(): string | null {
    let n = sys.event_old_object_json(sbuf, scap);
    if (again(n)) n = sys.event_old_object_json(sbuf, scap);
    return text(n);
  }
}

const theEvent = new ClusterEvent();

/** wasmkube_reserve, wasmkube_permit, wasmkube_prebind: f for the pod and its chosen node. */
export function runNodePoint(f: (pod: Pod, node: Node) => Status): i32 {
  beginCall();
  return finish(f(thePod, chosen));
}

/** wasmkube_unreserve, wasmkube_postbind: f for the pod and its chosen node. */
export function runNodeNotice(f: (pod: Pod, node: Node) => void): i32 {
  beginCall();
  f(thePod, chosen);
  return 0;
}

/** wasmkube_sign: f calls signFragment for each part of the pod the plugin's Filter and
 * Score verdicts read and returns true, or false for a pod it cannot sign (Unsignable).
 * Through it the pod's labels and annotations are read afresh: they are cached per call. */
export function runSign(f: (pod: Pod) => bool): i32 {
  beginCall();
  return f(thePod) ? 0 : 2;
}

/** wasmkube_events: f registers the events (registerEvent). */
export function runEvents(f: () => void): i32 {
  beginCall();
  f();
  return 0;
}

/** wasmkube_queueing_hint: f returns QUEUE or SKIP_EVENT. */
export function runHint(f: (pod: Pod, ev: ClusterEvent) => i32): i32 {
  beginCall();
  return f(thePod, theEvent) == SKIP_EVENT ? SKIP_EVENT : QUEUE;
}
