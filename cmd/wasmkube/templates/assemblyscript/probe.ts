// {{.Name}}: a wasmkube kubelet probe plugin in AssemblyScript, on the SDK in
// sdk/assemblyscript. The container is healthy when GET :8080/healthz on the pod's IP
// answers 2xx or 3xx.
import { Container, Status, netError, runProbe } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

const port = 8080;
const path = "/healthz";

// Runs once per probe period; its time limit is the probe's timeoutSeconds. A failure's
// reason is the Unhealthy event's message.
function probe(c: Container): Status {
  let status = c.httpGet(port, path);
  let what = "GET :" + port.toString() + path + ": ";
  if (status < 0) return Status.failure(what + netError(status));
  if (status < 200 || status >= 400) return Status.failure(what + "HTTP " + status.toString());
  return Status.OK;
}

export function wasmkube_probe(): i32 {
  return runProbe(probe);
}
