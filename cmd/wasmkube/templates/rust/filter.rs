//! {{.Name}}: a wasmkube scheduler Filter plugin in Rust on the wasmkube SDK (sdk/rust):
//! no_std, no allocator. It rejects every node labelled example.com/blocked (any value).
#![no_std]

use wasmkube::{Node, Pod, Status};

const BLOCKED: &str = "example.com/blocked";

/// Called for each node of a batch; it must answer from the pod and the node alone: any
/// instance may serve any batch, in any split and order.
fn filter(_pod: &Pod, node: &Node) -> Status {
    // Label values are at most 63 bytes.
    let mut value = [0u8; 64];
    match node.label(BLOCKED, &mut value) {
        Ok(Some(_)) => Status::reject("node is blocked (label example.com/blocked)"),
        Ok(None) => Status::OK,
        Err(e) => Status::error(e.as_str()),
    }
}

wasmkube::export_filter!(filter);

/// The signature (docs/abi.md section 1.5): Filter reads nothing of the pod, so every pod
/// signs alike (no fragments) and the scheduler may place a pod from the pass of
/// the pod before it (batching). Sign everything `filter` reads when you change it
/// (`binding::sign_fragment`); `wasmkube plugin conformance` fails a plugin that signs too
/// little.
fn sign(_pod: &Pod) -> bool {
    true
}

wasmkube::export_sign!(sign);
