//! {{.Name}}: a wasmkube validating admission policy in Rust on the wasmkube SDK
//! (sdk/rust): no_std, no allocator. Objects created or updated must carry the label app.
//! Which resources it sees is the admission: config's rules.
#![no_std]

use wasmkube::admission::{Operation, Request};
use wasmkube::Status;

fn validate(req: &Request) -> Status {
    match req.operation() {
        Ok(Operation::Create) | Ok(Operation::Update) => {}
        Ok(_) => return Status::OK, // DELETE and CONNECT carry no new object
        Err(e) => return Status::error(e.as_str()),
    }
    let mut value = [0u8; 64];
    match req.object_label("app", &mut value) {
        Ok(Some(_)) => Status::OK,
        // A reason starting with a field path and a colon becomes a 422 naming that field.
        Ok(None) => Status::deny("metadata.labels: the label app is required"),
        Err(e) => Status::error(e.as_str()),
    }
}

wasmkube::export_validate!(validate);
