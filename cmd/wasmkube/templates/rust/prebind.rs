//! {{.Name}}: a wasmkube scheduler PreBind plugin in Rust on the wasmkube SDK (sdk/rust):
//! no_std, no allocator. "Bind only once the license is granted": a pod annotated
//! example.com/license binds only when it also carries example.com/license-granted=true;
//! until then PreBind rejects (not now) and the pod goes back to the queue as
//! unschedulable.
#![no_std]

use wasmkube::{Error, Node, Pod, Status};

const LICENSE: &str = "example.com/license";
const GRANTED: &str = "example.com/license-granted";

fn prebind(pod: &Pod, _node: &Node) -> Status {
    // An empty buffer asks only whether the annotation is there (any value).
    match pod.annotation(LICENSE, &mut [0u8; 0]) {
        Ok(None) => return Status::OK, // asks for no license
        Ok(Some(_)) | Err(Error::TooSmall(_)) => {}
        Err(e) => return Status::error(e.as_str()),
    }
    let mut val = [0u8; 8];
    match pod.annotation(GRANTED, &mut val) {
        Ok(Some("true")) => Status::OK,
        _ => Status::reject("waiting for example.com/license-granted=true"),
    }
}

wasmkube::export_prebind!(prebind);
