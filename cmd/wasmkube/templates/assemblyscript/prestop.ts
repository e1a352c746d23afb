// {{.Name}}: a wasmkube kubelet preStop plugin in AssemblyScript, on the SDK in
// sdk/assemblyscript. Before the container is stopped it asks the application to shut
// down with POST :8080/shutdown. SIGTERM follows either way.
import { Container, Status, netError, runPreStop } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

const port = 8080;
const path = "/shutdown";

// Runs once when the container is stopped; its time limit is what is left of the pod's
// grace period. An error becomes a FailedPreStopHook event.
function prestop(c: Container): Status {
  let status = c.httpPost(port, path, "");
  let what = "POST :" + port.toString() + path + ": ";
  if (status < 0) return Status.error(what + netError(status));
  if (status < 200 || status >= 300) return Status.error(what + "HTTP " + status.toString());
  return Status.OK;
}

export function wasmkube_prestop(): i32 {
  return runPreStop(prestop);
}
