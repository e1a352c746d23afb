// Admission kinds (Validate, Mutate; docs/abi.md 4.6): the request under admission.
import * as sys from "./sys";
import { again, beginCall, bytes, kp, keyA, keyB, sbuf, scap, text, vp } from "./buf";
import { lines, Pod, Status, finish } from "./core";

/** The API request under admission: attributes, the new object and the stored one. */
export class Request {
  /** CREATE, UPDATE, DELETE or CONNECT. */
  operation(): string {
    let n = sys.request_operation(sbuf, scap);
    if (again(n)) n = sys.request_operation(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** The object's kind: Pod, Deployment, ... */
  kind(): string {
    let n = sys.request_kind(sbuf, scap);
    if (again(n)) n = sys.request_kind(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** The resource, with its subresource after a slash: pods, pods/status. */
  resource(): string {
    let n = sys.request_resource(sbuf, scap);
    if (again(n)) n = sys.request_resource(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** The object's name (empty for a CREATE with generateName). */
  name(): string {
    let n = sys.request_name(sbuf, scap);
    if (again(n)) n = sys.request_name(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** The namespace (empty for cluster-scoped objects). */
  namespace(): string {
    let n = sys.request_namespace(sbuf, scap);
    if (again(n)) n = sys.request_namespace(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** The caller's user name. */
  user(): string {
    let n = sys.request_user(sbuf, scap);
    if (again(n)) n = sys.request_user(sbuf, scap);
    let s = text(n);
    return s != null ? s : "";
  }
  /** The caller's groups. */
  groups(): string[] {
    let n = sys.request_groups(sbuf, scap);
    if (again(n)) n = sys.request_groups(sbuf, scap);
    return lines(text(n));
  }
  /** The admission.k8s.io/v1 AdmissionRequest as JSON text. */
  json(): string | null {
    let n = sys.request_json(sbuf, scap);
    if (again(n)) n = sys.request_json(sbuf, scap);
    return text(n);
  }
  /** The new object as JSON text; null when there is none (DELETE, CONNECT). */
  objectJSON(): string | null {
    let n = sys.object_json(sbuf, scap);
    if (again(n)) n = sys.object_json(sbuf, scap);
    return text(n);
  }
  /** The stored object as JSON text; null when there is none (CREATE). */
  oldObjectJSON(): string | null {
    let n = sys.old_object_json(sbuf, scap);
    if (again(n)) n = sys.old_object_json(sbuf, scap);
    return text(n);
  }
  /**
   * One value of the new object by a gjson path (spec.hostNetwork,
   * spec.containers.#.{name,resources}), as JSON text, evaluated by the host natively
   * (docs/abi.md 4.6.1); null when the path is not there (lastResult() -1) or there is
   * no new object (-2).
   */
  get(path: string): string | null {
    let k = keyA(path);
    let n = sys.object_get(kp, k, sbuf, scap);
    if (again(n)) n = sys.object_get(kp, k, sbuf, scap);
    return text(n);
  }
  /** get on the stored object (null on CREATE). */
  oldGet(path: string): string | null {
    let k = keyA(path);
    let n = sys.old_object_get(kp, k, sbuf, scap);
    if (again(n)) n = sys.old_object_get(kp, k, sbuf, scap);
    return text(n);
  }
  /** Label key of the new object; null when absent (lastResult() -1) or no object (-2). */
  objectLabel(key: string): string | null {
    let k = keyA(key);
    let n = sys.object_label(kp, k, sbuf, scap);
    if (again(n)) n = sys.object_label(kp, k, sbuf, scap);
    return text(n);
  }
  /** Annotation key of the new object. */
  objectAnnotation(key: string): string | null {
    let k = keyA(key);
    let n = sys.object_annotation(kp, k, sbuf, scap);
    if (again(n)) n = sys.object_annotation(kp, k, sbuf, scap);
    return text(n);
  }
  /** Label key of the stored object. */
  oldObjectLabel(key: string): string | null {
    let k = keyA(key);
    let n = sys.old_object_label(kp, k, sbuf, scap);
    if (again(n)) n = sys.old_object_label(kp, k, sbuf, scap);
    return text(n);
  }
  /** Annotation key of the stored object. */
  oldObjectAnnotation(key: string): string | null {
    let k = keyA(key);
    let n = sys.old_object_annotation(kp, k, sbuf, scap);
    if (again(n)) n = sys.old_object_annotation(kp, k, sbuf, scap);
    return text(n);
  }
  /** For a Pod: the images of its init, app and ephemeral containers, in that order. */
  podImages(): string[] {
    let n = sys.pod_images(sbuf, scap);
    if (again(n)) n = sys.pod_images(sbuf, scap);
    return lines(text(n));
  }
  /** The pod accessors, which answer when the object is a Pod. */
  pod(): Pod {
    return new Pod();
  }
  /** Adds a warning for the client (at most 16 per call, each cut to 1 KiB). */
  warning(message: string): void {
    let n = keyA(message);
    sys.warning(kp, n);
  }
  /** Records key=value with the request in the API server's log. */
  auditAnnotation(key: string, value: string): void {
    let k = keyA(key);
    let v = keyB(value);
    sys.audit_annotation(kp, k, vp, v);
  }
  /** Mutate only: the RFC 6902 JSON Patch (a JSON array of operations) to apply. */
  setPatch(patch: string): void {
    let b = String.UTF8.encode(patch);
    sys.set_patch(changetype<usize>(b), b.byteLength);
  }
  /** Context-aware: the object of resource named name as JSON text; null when it does
   * not exist (lastResult() -1) or the config does not grant the resource (-3). */
  getObject(resource: string, name: string): string | null {
    let r = keyA(resource);
    let m = keyB(name);
    let n = sys.get_object(kp, r, vp, m, sbuf, scap);
    if (again(n)) n = sys.get_object(kp, r, vp, m, sbuf, scap);
    return text(n);
  }
  /** Context-aware: {"items":[...]} with the objects of resource in the namespace. */
  listObjects(resource: string): string | null {
    let r = keyA(resource);
    let n = sys.list_objects(kp, r, sbuf, scap);
    if (again(n)) n = sys.list_objects(kp, r, sbuf, scap);
    return text(n);
  }
}

const theRequest = new Request();

/** wasmkube_validate: f once per request (Status.OK allows, Status.deny denies). */
export function runValidate(f: (req: Request) => Status): i32 {
  beginCall();
  return finish(f(theRequest));
}

/** wasmkube_mutate: f once per request; set the patch with req.setPatch and return OK. */
export function runMutate(f: (req: Request) => Status): i32 {
  beginCall();
  return finish(f(theRequest));
}
