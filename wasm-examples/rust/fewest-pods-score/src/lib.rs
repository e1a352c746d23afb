//! fewest-pods-score: a wasmkube scheduler Score plugin in Rust on the wasmkube SDK
//! (sdk/rust): no_std, no allocator, no WASI.
//!
//! A node scores 100 when it runs no pods and 0 when it is full: the score is the share of
//! its pod capacity (allocatable pods) still free. Nodes whose names start with the args'
//! `avoidPrefix` ({"avoidPrefix": "spot-"}) get a quarter of that.
#![no_std]

use wasmkube::{json, Error, Node, Once, Pod, Status, StrBuf};

// Parsed once per instance in init: args never change for an instance's life.
static PREFIX: Once<StrBuf<64>> = Once::new();

fn init() -> Status {
    let mut buf = [0u8; 1024];
    let args = match wasmkube::args(&mut buf) {
        Ok(a) => a,
        Err(Error::TooSmall(_)) => return Status::error("args: longer than 1 KiB"),
        Err(e) => return Status::error(e.as_str()),
    };
    if args.is_empty() {
        return Status::OK;
    }
    let prefix = match json::parse(args) {
        Some(v) if v.kind() == json::Kind::Object => match v.get("avoidPrefix") {
            Some(p) => p,
            None => return Status::OK,
        },
        _ => return Status::error(r#"args: must be a JSON object, e.g. {"avoidPrefix": "spot-"}"#),
    };
    let mut tmp = [0u8; 64];
    match prefix.as_str().map(|s| s.decode(&mut tmp)) {
        None => Status::error("args.avoidPrefix: must be a string"),
        Some(None) => Status::error("args.avoidPrefix: longer than 64 bytes"),
        Some(Some(p)) => {
            if !p.is_empty() {
                let mut s = StrBuf::new();
                s.push_str(p);
                let _ = PREFIX.set(s);
            }
            Status::OK
        }
    }
}

fn score(_pod: &Pod, node: &Node) -> Result<i64, Status> {
    let res = match node.resources() {
        Ok(r) => r,
        Err(_) => return Ok(0),
    };
    let (max_pods, pods) = (res.allocatable.pods, res.requested.pods);
    let mut s = if max_pods <= 0 || pods >= max_pods { 0 } else { (max_pods - pods) * 100 / max_pods };
    if let Some(prefix) = PREFIX.get() {
        // Node names are DNS subdomains (at most 253 bytes): the buffer always fits.
        let mut name = [0u8; 256];
        if matches!(node.name(&mut name), Ok(n) if n.starts_with(prefix.as_str())) {
            s /= 4;
        }
    }
    Ok(s)
}

wasmkube::export_init!(init);
wasmkube::export_score!(score);
