// {{.Name}}: a wasmkube scheduler Score plugin in AssemblyScript, on the SDK in
// sdk/assemblyscript. A node scores the share of its allocatable cpu left free after
// placing the pod, 0 to 100 (the non-zero requests, as upstream's LeastAllocated counts them).
import { Node, Pod, runScore, runSign, scoreError, signFragment } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

// Called for each node of a batch; the score must be in [0, 100] and depend on the pod
// and the node alone: do not rescale within the batch (that is NormalizeScore's job).
function score(pod: Pod, node: Node): i64 {
  let req = pod.requests();
  let res = node.resources();
  if (req == null || res == null) return scoreError("resources unavailable");
  let alloc = res.allocatableMilliCPU;
  let used = res.nonZeroRequestedMilliCPU + req.nonZeroMilliCPU;
  if (alloc <= 0 || used >= alloc) return 0;
  return (alloc - used) * 100 / alloc;
}

export function wasmkube_score(count: i32): i32 {
  return runScore(count, score);
}

// The signature (docs/abi.md section 1.5): score reads the pod's non-zero cpu request and
// nothing else of it, so pods that ask for the same cpu may be placed from one pass
// (batching). Sign everything score reads when you change it; `wasmkube plugin
// conformance` fails a plugin that signs too little. false: unsignable.
function sign(pod: Pod): bool {
  let req = pod.requests();
  if (req == null) return false;
  signFragment("nonzero-cpu", req.nonZeroMilliCPU.toString());
  return true;
}

export function wasmkube_sign(): i32 {
  return runSign(sign);
}
