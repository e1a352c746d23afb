//! {{.Name}}: a wasmkube kubelet preStop plugin in Rust on the wasmkube SDK (sdk/rust):
//! no_std, no allocator. Before the container is stopped it asks the application to shut
//! down with POST :8080/shutdown. SIGTERM follows either way.
#![no_std]

use wasmkube::kubelet::Container;
use wasmkube::{status, Code, Status};

const PORT: u16 = 8080;
const PATH: &str = "/shutdown";

/// Runs once when the container is stopped; its time limit is what is left of the pod's
/// grace period. An error becomes a FailedPreStopHook event.
fn prestop(c: &Container) -> Status {
    match c.http_post(PORT, PATH, b"") {
        Ok(s) if (200..300).contains(&s) => Status::OK,
        Ok(s) => status!(Code::ERROR, "POST :{}{}: HTTP {}", PORT, PATH, s),
        Err(e) => status!(Code::ERROR, "POST :{}{}: {}", PORT, PATH, e.as_str()),
    }
}

wasmkube::export_prestop!(prestop);
