// {{.Name}}: a wasmkube validating admission policy in AssemblyScript, on the SDK in
// sdk/assemblyscript. Objects created or updated must carry the label app. Which
// resources it sees is the admission: config's rules.
import { Request, Status, runValidate } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

function validate(req: Request): Status {
  let op = req.operation();
  if (op != "CREATE" && op != "UPDATE") return Status.OK; // DELETE and CONNECT carry no new object
  // A reason starting with a field path and a colon becomes a 422 naming that field.
  if (req.objectLabel("app") == null) return Status.deny("metadata.labels: the label app is required");
  return Status.OK;
}

export function wasmkube_validate(): i32 {
  return runValidate(validate);
}
