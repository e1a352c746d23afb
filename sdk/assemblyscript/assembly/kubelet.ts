// Kubelet kinds (Probe, PreStop; docs/abi.md 4.7): one container of a running pod, and
// HTTP/TCP towards the pod's own IP.
import * as sys from "./sys";
import { again, beginCall, bytes, kp, keyA, keyB, sbuf, scap, text, vp } from "./buf";
import { Pod, Status, finish } from "./core";

// Negative results of the network functions (Linux errno, negated).
export const ECONNREFUSED: i32 = -111;
export const ETIMEDOUT: i32 = -110;
export const EHOSTUNREACH: i32 = -113;
export const ECONNRESET: i32 = -104;
export const EINVAL: i32 = -22;
export const EACCES: i32 = -13;
export const EIO: i32 = -5;

/** A short description of a negative network result, fit for a status reason. */
export function netError(code: i32): string {
  switch (code) {
    case ECONNREFUSED: return "connection refused";
    case ETIMEDOUT: return "timed out";
    case EHOSTUNREACH: return "host unreachable";
    case ECONNRESET: return "connection reset";
    case EINVAL: return "invalid port or path";
    case EACCES: return "pod has no IP yet";
    case EIO: return "I/O error";
    case -2: return "not available in this kind";
  }
  return "network error " + code.toString();
}

/** The container a Probe or PreStop call is about. */
export class Container {
  /** The pod, as the kubelet last saw it. */
  pod(): Pod {
    return new Pod();
  }
  /** The container's name. */
  name(): string {
    let n = sys.container_name(sbuf, scap);
    if (again(n)) n = sys.container_name(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** startup, liveness or readiness; "" in PreStop. */
  probeKind(): string {
    let n = sys.probe_kind(sbuf, scap);
    if (again(n)) n = sys.probe_kind(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** The pod's IP (status.podIP). */
  podIP(): string {
    let n = sys.pod_ip(sbuf, scap);
    if (again(n)) n = sys.pod_ip(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** 0 when a TCP connection to the pod's IP and port opened, or -errno. */
  tcpConnect(port: i32): i32 {
    return sys.tcp_connect(port);
  }
  /** GET http://<pod IP>:<port><path>: the HTTP status, or -errno. */
  httpGet(port: i32, path: string): i32 {
    let p = keyA(path);
    return sys.http_get(port, kp, p);
  }
  /** PreStop only: POST body; the HTTP status, or -errno (-2 in a Probe). */
  httpPost(port: i32, path: string, body: string): i32 {
    let p = keyA(path);
    let b = keyB(body);
    return sys.http_post(port, kp, p, vp, b);
  }
  /** The body of the call's last HTTP response (cut to 64 KiB), or null before any. */
  responseBody(): string | null {
    let n = sys.response_body(sbuf, scap);
    if (again(n)) n = sys.response_body(sbuf, scap);
    return text(n);
  }
  /** The raw bytes of the last response's body, or null. */
  responseBytes(): Uint8Array | null {
    let n = sys.response_body(sbuf, scap);
    if (again(n)) n = sys.response_body(sbuf, scap);
    return bytes(n);
  }
  /** The first value of header name of the last response, or null. */
  responseHeader(name: string): string | null {
    let k = keyA(name);
    let n = sys.response_header(kp, k, sbuf, scap);
    if (again(n)) n = sys.response_header(kp, k, sbuf, scap);
    return text(n);
  }
  /** PreStop only: sleeps ms milliseconds; 0, or ETIMEDOUT when the time limit came first. */
  sleep(ms: i32): i32 {
    return sys.sleep_ms(ms);
  }
}

const theContainer = new Container();

/** wasmkube_probe: f once per probe period (OK passes, Status.failure fails). */
export function runProbe(f: (c: Container) => Status): i32 {
  beginCall();
  return finish(f(theContainer));
}

/** wasmkube_prestop: f once when the container is stopped (OK, or an error). */
export function runPreStop(f: (c: Container) => Status): i32 {
  beginCall();
  return finish(f(theContainer));
}
