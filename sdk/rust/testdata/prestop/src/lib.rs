//! PreStop through the SDK, for sdk_test.go: it POSTs the container's name and the pod's IP
//! to the pod's /drain (port from the pod's `port` annotation), sleeps, and fails with the
//! response's X-Drain header unless the status is 200.
#![no_std]

use core::fmt::Write;
use wasmkube::kubelet::Container;
use wasmkube::{status, Code, Status, StrBuf};

fn prestop(c: &Container) -> Status {
    let (mut a, mut n, mut ip, mut h) = ([0u8; 16], [0u8; 64], [0u8; 64], [0u8; 64]);
    // The kubelet's smoke call has no such annotation (and answers on every port).
    let port = match c.pod().annotation("port", &mut a) {
        Ok(Some(p)) => p.parse().unwrap_or(0),
        _ => 8080,
    };
    let mut body = StrBuf::<160>::new();
    let _ = write!(body, "{}@{}", c.name(&mut n).unwrap_or("?"), c.pod_ip(&mut ip).unwrap_or("?"));
    match c.http_post(port, "/drain", body.as_str().as_bytes()) {
        Ok(200) => {}
        Ok(s) => {
            let hdr = match c.response_header("X-Drain", &mut h) {
                Ok(Some(v)) => v,
                _ => "-",
            };
            return status!(Code::ERROR, "drain: {} {}", s, hdr);
        }
        Err(e) => return Status::error(e.as_str()),
    }
    match c.sleep_ms(10) {
        Ok(()) => Status::OK,
        Err(e) => Status::error(e.as_str()),
    }
}

wasmkube::export_prestop!(prestop);
