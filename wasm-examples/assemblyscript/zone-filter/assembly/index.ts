// zone-filter: a wasmkube Filter plugin in AssemblyScript, on the SDK in sdk/assemblyscript.
// It admits only nodes whose topology.kubernetes.io/zone label is in the args' list
// ({"zones": ["zone-1"]}); a pod's wasmkube.io/zone annotation (one zone or a
// comma-separated list) overrides the list for that pod. The same verdicts as the Go
// example wasm-examples/go/zone-filter.
import { Node, Pod, Status, UNRESOLVABLE, args, parseJSON, runFilter, runInit } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

const zoneLabel = "topology.kubernetes.io/zone";
const zoneAnnotation = "wasmkube.io/zone";

// Parsed once per instance in init: args never change for an instance's life.
let allowed = new Set<string>();

function zoneSet(zones: string[]): Set<string> {
  let s = new Set<string>();
  for (let i = 0; i < zones.length; i++) {
    let z = zones[i].trim();
    if (z.length > 0) s.add(z);
  }
  return s;
}

function init(): Status {
  let a = args();
  let v = a.length > 0 ? parseJSON(a) : null;
  if (a.length > 0 && v == null) return Status.error("args: not valid JSON");
  let zones = v != null ? v.get("zones") : null;
  if (zones == null || !zones.isArray() || zones.items.length == 0) {
    return Status.error('args.zones: at least one zone is required, e.g. {"zones": ["zone-1"]}');
  }
  let names = new Array<string>();
  for (let i = 0; i < zones.items.length; i++) {
    let z = zones.items[i];
    if (!z.isString()) return Status.error("args.zones[" + i.toString() + "]: must be a string");
    names.push(z.str);
  }
  allowed = zoneSet(names);
  return Status.OK;
}

// The zone set of the last annotation seen. Filter runs once per node with the same pod,
// and the set depends on nothing but the annotation's text, so it is built once per pod,
// not once per node (a value cache, not per-pod state: any pod with that text gets it).
let lastAnnotation: string | null = null;
let lastSet = new Set<string>();

function filter(pod: Pod, node: Node): Status {
  let zones = allowed;
  let perPod = pod.annotation(zoneAnnotation);
  if (perPod != null) {
    if (perPod != lastAnnotation) {
      lastSet = zoneSet(perPod.split(","));
      lastAnnotation = perPod;
    }
    zones = lastSet;
  }
  let zone = node.label(zoneLabel);
  if (zone == null) return new Status(UNRESOLVABLE, "node has no " + zoneLabel + " label");
  if (!zones.has(zone)) return new Status(UNRESOLVABLE, "node's zone " + zone + " is not allowed");
  return Status.OK;
}

export function wasmkube_init(): i32 {
  return runInit(init);
}

export function wasmkube_filter(count: i32): i32 {
  return runFilter(count, filter);
}
