// {{.Name}}: a wasmkube scheduler Filter plugin in AssemblyScript, on the SDK in
// sdk/assemblyscript. It rejects every node labelled example.com/blocked (any value).
import { Node, Pod, Status, runFilter, runSign } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

const blockedLabel = "example.com/blocked";

// Called for each node of a batch; it must answer from the pod and the node alone: any
// instance may serve any batch, in any split and order.
function filter(pod: Pod, node: Node): Status {
  if (node.label(blockedLabel) != null) return Status.reject("node is blocked (label " + blockedLabel + ")");
  return Status.OK;
}

export function wasmkube_filter(count: i32): i32 {
  return runFilter(count, filter);
}

// The signature (docs/abi.md section 1.5): filter reads nothing of the pod, so every pod
// signs alike (no fragments) and the scheduler may place a pod from the pass of the pod
// before it (batching). Sign everything filter reads when you change it (signFragment);
// `wasmkube plugin conformance` fails a plugin that signs too little.
function sign(pod: Pod): bool {
  return true;
}

export function wasmkube_sign(): i32 {
  return runSign(sign);
}
