// {{.Name}}: a wasmkube scheduler PreBind plugin in AssemblyScript, on the SDK in
// sdk/assemblyscript. "Bind only once the license is granted": a pod annotated
// example.com/license binds only when it also carries example.com/license-granted=true;
// until then PreBind rejects (not now) and the pod goes back to the queue as unschedulable.
import { Node, Pod, Status, runNodePoint } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

const licenseKey = "example.com/license";
const grantedKey = "example.com/license-granted";

function prebind(pod: Pod, node: Node): Status {
  if (pod.annotation(licenseKey) == null) return Status.OK; // asks for no license
  let granted = pod.annotation(grantedKey);
  if (granted != null && granted == "true") return Status.OK;
  return Status.reject("waiting for " + grantedKey + "=true");
}

export function wasmkube_prebind(): i32 {
  return runNodePoint(prebind);
}
