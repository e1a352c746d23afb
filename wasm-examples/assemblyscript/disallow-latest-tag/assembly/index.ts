// disallow-latest-tag: a wasmkube validating admission policy in AssemblyScript, on the
// SDK in sdk/assemblyscript. A pod whose containers (init, app or ephemeral) use an image
// without a tag or with the tag latest is refused, because what such an image runs
// changes whenever someone pushes; an image pinned by digest is allowed whatever its tag.
// The same verdicts and messages as the Go and C versions (wasm-examples/go and
// wasm-examples/c/disallow-latest-tag).
import { Request, Status, runValidate } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

// isFloating reports whether an image reference names no fixed content: no digest, and no
// tag or the tag latest. A registry's port (localhost:5000/app) is not a tag: the tag is
// after the last colon of the last path component.
function isFloating(image: string): bool {
  if (image.includes("@")) return false;
  let name = image.substring(image.lastIndexOf("/") + 1);
  let i = name.lastIndexOf(":");
  return i < 0 || name.substring(i + 1) == "latest";
}

function validate(req: Request): Status {
  if (req.kind() != "Pod") return Status.OK;
  let op = req.operation();
  if (op != "CREATE" && op != "UPDATE") return Status.OK;
  let images = req.podImages();
  let floating = new Array<string>();
  for (let i = 0; i < images.length; i++) {
    let img = images[i];
    if (isFloating(img) && !floating.includes(img)) floating.push(img);
  }
  if (floating.length == 0) return Status.OK;
  if (floating.length == 1) {
    return Status.deny("image " + floating[0] + " has no tag or the tag latest: pin a version or a digest");
  }
  return Status.deny("images " + floating.join(", ") + " have no tag or the tag latest: pin a version or a digest");
}

export function wasmkube_validate(): i32 {
  return runValidate(validate);
}
