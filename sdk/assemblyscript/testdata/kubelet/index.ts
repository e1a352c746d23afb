// PreStop through the SDK, for sdk_test.go: it POSTs the container's name to the pod's
// /drain, sleeps, and fails with the response's X-Drain header unless the status is 200.
import { Container, Status, runPreStop } from "../../assembly";
export { wasmkube_abi_version } from "../../assembly";

function prestop(c: Container): Status {
  // The kubelet's smoke call has no such annotation (and answers on every port).
  let a = c.pod().annotation("port");
  let port = a != null ? I32.parseInt(a) : 8080;
  let status = c.httpPost(port, "/drain", c.name() + "@" + c.podIP());
  if (status != 200) {
    let h = c.responseHeader("X-Drain");
    return Status.error("drain: " + status.toString() + " " + (h != null ? h : "-"));
  }
  if (c.sleep(10) != 0) return Status.error("sleep was cut short");
  return Status.OK;
}

export function wasmkube_prestop(): i32 { return runPreStop(prestop); }
