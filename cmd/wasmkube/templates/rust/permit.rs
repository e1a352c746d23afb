//! {{.Name}}: a wasmkube scheduler Permit plugin in Rust on the wasmkube SDK (sdk/rust):
//! no_std, no allocator. A gang: pods labelled scheduling.wasmkube.io/group=NAME and
//! scheduling.wasmkube.io/min-available=N bind all together or not at all: each member
//! waits (60 s) until the N-th arrives, which allows every member waiting in its group.
#![no_std]

use wasmkube::{binding, Node, Pod, Status};

const GROUP: &str = "scheduling.wasmkube.io/group";
const MIN_AVAILABLE: &str = "scheduling.wasmkube.io/min-available";

/// The group's size from its label: 1 to 9999, or None when absent or not such a number.
fn min_available(pod: &Pod) -> Option<usize> {
    let mut buf = [0u8; 16];
    match pod.label(MIN_AVAILABLE, &mut buf) {
        Ok(Some(v)) if !v.starts_with('+') => v.parse().ok().filter(|n| (1..=9999).contains(n)),
        _ => None,
    }
}

/// Permit runs in the scheduling cycle, one pod after another, so the last member of a
/// group sees every earlier one waiting (docs/abi.md section 1.4). Pods are held per
/// plugin, not per instance: any instance may serve any call.
fn permit(pod: &Pod, _node: &Node) -> Status {
    // Label values are at most 63 bytes.
    let mut group = [0u8; 64];
    let group = match pod.label(GROUP, &mut group) {
        Ok(Some(g)) => g,
        Ok(None) => return Status::OK, // not in a group
        Err(e) => return Status::error(e.as_str()),
    };
    let min = match min_available(pod) {
        Some(n) => n,
        None => return Status::unresolvable("label scheduling.wasmkube.io/min-available must be a number from 1 to 9999"),
    };
    // The UIDs of the members waiting, one per line (36 bytes and a newline each).
    let mut uids = [0u8; 65536];
    let waiting = match binding::waiting_pods(group, &mut uids) {
        Ok(lines) => lines,
        Err(e) => return Status::error(e.as_str()),
    };
    if waiting.clone().count() + 1 < min {
        return binding::wait(60_000, group);
    }
    for uid in waiting {
        binding::allow_waiting(uid);
    }
    Status::OK
}

wasmkube::export_permit!(permit);
