// http-probe: a wasmkube kubelet Probe plugin in AssemblyScript, on the SDK in
// sdk/assemblyscript. It GETs a path on the pod's IP ({"port": 8080, "path": "/healthz"})
// and passes on a 2xx or 3xx status, as an httpGet probe does; otherwise it fails with the
// status and the start of the body in the Unhealthy event:
// `GET :8080/healthz: status 503: database unreachable`.
import { Container, EACCES, Status, args, netError, parseJSON, runInit, runProbe } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

let port: i32 = 0;
let path = "/";

function init(): Status {
  let v = parseJSON(args());
  if (v == null || !v.isObject()) return Status.error('args: a JSON object is required, e.g. {"port": 8080, "path": "/healthz"}');
  let p = v.get("port");
  if (p == null || !p.isNumber() || p.num != Math.floor(p.num) || p.num < 1 || p.num > 65535) {
    return Status.error("args.port: a port number from 1 to 65535 is required");
  }
  port = <i32>p.num;
  let q = v.get("path");
  if (q != null) {
    if (!q.isString() || !q.str.startsWith("/") || q.str.startsWith("//")) {
      return Status.error('args.path: an absolute path is required, e.g. "/healthz"');
    }
    path = q.str;
  }
  return Status.OK;
}

function probe(c: Container): Status {
  let what = "GET :" + port.toString() + path;
  let status = c.httpGet(port, path);
  // No IP yet is not the container's fault: an error, which failurePolicy decides.
  if (status == EACCES) return Status.error(what + ": " + netError(status));
  if (status < 0) return Status.failure(what + ": " + netError(status));
  if (status >= 200 && status < 400) return Status.OK;
  let body = c.responseBody();
  let reason = what + ": status " + status.toString();
  if (body != null && body.length > 0) {
    reason += ": " + (body.length > 100 ? body.substring(0, 100) + "..." : body).trim();
  }
  return Status.failure(reason);
}

export function wasmkube_init(): i32 {
  return runInit(init);
}

export function wasmkube_probe(): i32 {
  return runProbe(probe);
}
