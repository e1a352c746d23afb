// {{.Name}}: a wasmkube scheduler Permit plugin in AssemblyScript, on the SDK in
// sdk/assemblyscript. A gang: pods labelled scheduling.wasmkube.io/group=NAME and
// scheduling.wasmkube.io/min-available=N bind all together or not at all: each member
// waits (60 s) until the N-th arrives, which allows every member waiting in its group.
import { Node, Pod, Status, allowWaiting, runNodePoint, wait, waitingPods } from "wasmkube/assembly";
export { wasmkube_abi_version } from "wasmkube/assembly";

const groupLabel = "scheduling.wasmkube.io/group";
const sizeLabel = "scheduling.wasmkube.io/min-available";

// The group's size from its label: 1 to 9999, or 0 when absent or not such a number.
function minAvailable(pod: Pod): i32 {
  let v = pod.label(sizeLabel);
  if (v == null || v.length < 1 || v.length > 4) return 0;
  let n = 0;
  for (let i = 0; i < v.length; i++) {
    let c = v.charCodeAt(i);
    if (c < 48 || c > 57) return 0; // not a digit
    n = n * 10 + (c - 48);
  }
  return n;
}

// Permit runs in the scheduling cycle, one pod after another, so the last member of a
// group sees every earlier one waiting (docs/abi.md section 1.4). Pods are held per
// plugin, not per instance: any instance may serve any call.
function permit(pod: Pod, node: Node): Status {
  let group = pod.label(groupLabel);
  if (group == null) return Status.OK; // not in a group
  let min = minAvailable(pod);
  if (min == 0) return Status.unresolvable("label " + sizeLabel + " must be a number from 1 to 9999");
  let waiting = waitingPods(group);
  if (waiting.length + 1 < min) return wait(60000, group);
  for (let i = 0; i < waiting.length; i++) allowWaiting(waiting[i]);
  return Status.OK;
}

export function wasmkube_permit(): i32 {
  return runNodePoint(permit);
}
