// wasmkube: the AssemblyScript guest SDK for wasmkube plugins (ABI v1, docs/abi.md).
//
// A plugin's entry file exports the ABI's entry points as plain functions that hand a
// callback to the SDK's runner for that kind, and re-exports wasmkube_abi_version:
//
//   import { Node, Pod, Status, runFilter } from "wasmkube";
//   export { wasmkube_abi_version } from "wasmkube";
//
//   function filter(pod: Pod, node: Node): Status {
//     return node.label("disk") == "ssd" ? Status.OK : Status.reject("node has no ssd");
//   }
//   export function wasmkube_filter(count: i32): i32 { return runFilter(count, filter); }
//
// Build with the SDK's asconfig.json (extend it): it replaces the standard library's env
// imports (abort, trace, seed) with the functions in env.ts and turns the start function
// into an exported _initialize, so the module imports only from wasmkube.
import "./env";

export * from "./core";
export * from "./admission";
export * from "./kubelet";
export * from "./binding";
export { lastResult } from "./buf";
export { JSONValue, JSONKind, parseJSON } from "./json";
