// {{.Name}}: a wasmkube scheduler Score plugin in AssemblyScript, on the SDK in
// sdk/assemblyscript. A node scores the share of its allocatable cpu left free after
// placing the pod, 0 to 100 (the non-zero requests, as upstream's LeastAllocated counts them).
import { Node, Pod, runScore, scoreError } from "wasmkube/assembly";
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
