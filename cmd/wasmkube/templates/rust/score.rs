//! {{.Name}}: a wasmkube scheduler Score plugin in Rust on the wasmkube SDK (sdk/rust):
//! no_std, no allocator. A node scores the share of its allocatable cpu left free after
//! placing the pod, 0 to 100 (the non-zero requests, as upstream's LeastAllocated counts
//! them).
#![no_std]

use wasmkube::{Node, Pod, Status};

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
