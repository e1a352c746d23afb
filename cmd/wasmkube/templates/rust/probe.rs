//! {{.Name}}: a wasmkube kubelet probe plugin in Rust on the wasmkube SDK (sdk/rust):
//! no_std, no allocator. The container is healthy when GET :8080/healthz on the pod's IP
//! answers 2xx or 3xx.
#![no_std]

use wasmkube::kubelet::Container;
use wasmkube::{status, Code, Status};

const PORT: u16 = 8080;
const PATH: &str = "/healthz";

/// Runs once per probe period; its time limit is the probe's timeoutSeconds. A failure's
/// reason is the Unhealthy event's message.
fn probe(c: &Container) -> Status {
    match c.http_get(PORT, PATH) {
        Ok(s) if (200..400).contains(&s) => Status::OK,
        Ok(s) => status!(Code::FAILURE, "GET :{}{}: HTTP {}", PORT, PATH, s),
        Err(e) => status!(Code::FAILURE, "GET :{}{}: {}", PORT, PATH, e.as_str()),
    }
}

wasmkube::export_probe!(probe);
