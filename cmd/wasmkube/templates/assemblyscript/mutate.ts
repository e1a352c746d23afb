// {{.Name}}: a wasmkube mutating admission policy in AssemblyScript, on the SDK in
// sdk/assemblyscript. Pods created get spec.enableServiceLinks: false (no environment
// variables for every Service of the namespace). Which resources it sees is the
// admission: config's rules.
import { Request, Status, runMutate } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

function mutate(req: Request): Status {
  if (req.operation() != "CREATE" || req.kind() != "Pod") return Status.OK;
  // An RFC 6902 JSON Patch the host applies to the new object; "add" on a member that
  // exists replaces it.
  req.setPatch('[{"op":"add","path":"/spec/enableServiceLinks","value":false}]');
  return Status.OK;
}

export function wasmkube_mutate(): i32 {
  return runMutate(mutate);
}
