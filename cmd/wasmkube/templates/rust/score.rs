//! {{.Name}}: a wasmkube scheduler Score plugin in Rust on the wasmkube SDK (sdk/rust):
//! no_std, no allocator. A node scores the share of its allocatable cpu left free after
//! placing the pod, 0 to 100 (the non-zero requests, as upstream's LeastAllocated counts
//! them).
#![no_std]

use core::fmt::Write;

use wasmkube::{binding, Node, Pod, Status, StrBuf};

/// Called for each node of a batch; the score must be in [0, 100] and depend on the pod
/// and the node alone: do not rescale within the batch (that is NormalizeScore's job).
fn score(pod: &Pod, node: &Node) -> Result<i64, Status> {
    let req = pod.requests().map_err(|e| Status::error(e.as_str()))?;
    let res = node.resources().map_err(|e| Status::error(e.as_str()))?;
    let (alloc, used) = (res.allocatable.milli_cpu, res.nonzero_requested_milli_cpu + req.nonzero_milli_cpu);
    if alloc <= 0 || used >= alloc {
        return Ok(0);
    }
    Ok((alloc - used) * 100 / alloc)
}

wasmkube::export_score!(score);

/// The signature (docs/abi.md section 1.5): `score` reads the pod's non-zero cpu request
/// and nothing else of it, so pods that ask for the same cpu may be placed from one pass
/// (batching). Sign everything `score` reads when you change it; `wasmkube plugin
/// conformance` fails a plugin that signs too little; false: unsignable.
fn sign(pod: &Pod) -> bool {
    let req = match pod.requests() {
        Ok(r) => r,
        Err(_) => return false, // unsignable: scheduled by a pass of its own
    };
    let mut cpu = StrBuf::<24>::new();
    let _ = write!(cpu, "{}", req.nonzero_milli_cpu);
    binding::sign_fragment("nonzero-cpu", cpu.as_str());
    true
}

wasmkube::export_sign!(sign);
