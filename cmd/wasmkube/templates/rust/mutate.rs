//! {{.Name}}: a wasmkube mutating admission policy in Rust on the wasmkube SDK (sdk/rust):
//! no_std, no allocator. Pods created get spec.enableServiceLinks: false (no environment
//! variables for every Service of the namespace). Which resources it sees is the
//! admission: config's rules.
#![no_std]

use wasmkube::admission::{Operation, Request};
use wasmkube::Status;

fn mutate(req: &Request) -> Status {
    if !matches!(req.operation(), Ok(Operation::Create)) {
        return Status::OK;
    }
    let mut kind = [0u8; 64];
    if !matches!(req.kind(&mut kind), Ok("Pod")) {
        return Status::OK;
    }
    // An RFC 6902 JSON Patch the host applies to the new object; "add" on a member that
    // exists replaces it.
    req.set_patch(br#"[{"op":"add","path":"/spec/enableServiceLinks","value":false}]"#);
    Status::OK
}

wasmkube::export_mutate!(mutate);
