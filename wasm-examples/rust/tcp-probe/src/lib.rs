//! tcp-probe: a wasmkube kubelet Probe plugin in Rust on the wasmkube SDK (sdk/rust). The
//! probe passes when a TCP connection to the pod's IP and the args' port opens
//! ({"port": 8080}), as a tcpSocket probe does, and fails with the reason otherwise
//! (`tcp port 8080: connection refused`).
#![no_std]

use wasmkube::kubelet::{Container, NetError};
use wasmkube::{json, status, Code, Error, Once, Status};

static PORT: Once<u16> = Once::new();

fn init() -> Status {
    let mut buf = [0u8; 1024];
    let args = match wasmkube::args(&mut buf) {
        Ok(a) => a,
        Err(Error::TooSmall(_)) => return Status::error("args: longer than 1 KiB"),
        Err(e) => return Status::error(e.as_str()),
    };
    let port = json::parse(args).and_then(|v| v.get("port")).and_then(|p| p.as_i64());
    match port {
        Some(p) if (1..=65535).contains(&p) => {
            let _ = PORT.set(p as u16);
            Status::OK
        }
        _ => Status::error(r#"args.port: a port number from 1 to 65535 is required, e.g. {"port": 8080}"#),
    }
}

fn probe(c: &Container) -> Status {
    let port = match PORT.get() {
        Some(p) => *p,
        None => return Status::error("args were not read"),
    };
    match c.tcp_connect(port) {
        Ok(()) => Status::OK,
        // No IP yet is not the container's fault: an error, which failurePolicy decides.
        Err(NetError::NoPodIp) => Status::error("pod has no IP yet"),
        Err(e) => status!(Code::FAILURE, "tcp port {}: {}", port, e.as_str()),
    }
}

wasmkube::export_init!(init);
wasmkube::export_probe!(probe);
