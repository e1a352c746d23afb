// Validate and Mutate through the SDK, for sdk_test.go: Mutate adds the label
// defaulted=yes to an object without it and warns; Validate denies a pod named "bad" with
// the field path form of a reason, and records the user as an audit annotation.
import { Request, Status, runMutate, runValidate } from "../../assembly";
export { wasmkube_abi_version } from "../../assembly";

function mutate(r: Request): Status {
  if (r.objectLabel("defaulted") != null) return Status.OK;
  r.setPatch('[{"op":"add","path":"/metadata/labels","value":{"defaulted":"yes"}}]');
  r.warning("labelled " + r.kind() + " " + r.name());
  return Status.OK;
}

function validate(r: Request): Status {
  r.auditAnnotation("user", r.user() + " in " + r.groups().join(","));
  if (r.name() == "bad") return Status.deny("metadata.name: bad is not allowed (" + r.operation() + ")");
  return Status.OK;
}

export function wasmkube_mutate(): i32 { return runMutate(mutate); }
export function wasmkube_validate(): i32 { return runValidate(validate); }
