//! require-labels: a wasmkube validating admission policy in Rust on the wasmkube SDK
//! (sdk/rust). An object the policy's rules match must carry every label its args list
//! ({"labels": ["team"]}), or the request is refused with `pods "web" must carry label
//! team`. The same verdicts and messages as the Go example wasm-examples/go/require-labels.
#![no_std]

use core::fmt::Write;
use wasmkube::admission::{Operation, Request};
use wasmkube::{json, status, Code, Error, FixedBuf, Once, Status, StrBuf, REASON_CAP};

// The args, checked and kept once per instance; Validate walks their label list.
static ARGS: Once<FixedBuf<4096>> = Once::new();

fn labels(args: &[u8]) -> Option<json::Value<'_>> {
    json::parse(args)?.get("labels")
}

fn init() -> Status {
    let mut args = FixedBuf::<4096>::new();
    match wasmkube::args(&mut args) {
        Ok(_) => {}
        Err(Error::TooSmall(_)) => return Status::error("args: longer than 4 KiB"),
        Err(e) => return Status::error(e.as_str()),
    }
    let list = match labels(args.as_bytes()) {
        Some(l) if l.kind() == json::Kind::Array && l.items().next().is_some() => l,
        _ => return Status::error(r#"args.labels: at least one label key is required, e.g. {"labels": ["team"]}"#),
    };
    for (i, item) in list.items().enumerate() {
        let key = item.as_str().and_then(|s| s.as_plain());
        match key {
            Some(k) if !k.trim().is_empty() && !k.contains(|c| c == ' ' || c == '\t' || c == '\n') => {}
            _ => {
                let mut raw = StrBuf::<128>::new();
                raw.push_str(core::str::from_utf8(item.raw()).unwrap_or("?"));
                return status!(Code::ERROR, "args.labels[{}]: {} is not a label key", i, raw.as_str());
            }
        }
    }
    let _ = ARGS.set(args);
    Status::OK
}

fn validate(req: &Request) -> Status {
    match req.operation() {
        Ok(Operation::Create) | Ok(Operation::Update) => {}
        Ok(_) => return Status::OK, // DELETE and CONNECT carry no new object
        Err(e) => return Status::error(e.as_str()),
    }
    let args = match ARGS.get() {
        Some(a) => a,
        None => return Status::error("args were not read"),
    };
    let mut missing = StrBuf::<REASON_CAP>::new();
    let mut n = 0;
    // Label keys are at most 317 bytes (253 of prefix, '/', 63 of name), values 63.
    let (mut key, mut value) = ([0u8; 320], [0u8; 64]);
    for item in labels(args.as_bytes()).into_iter().flat_map(|l| l.items()) {
        let k = match item.as_str().and_then(|s| s.decode(&mut key)) {
            Some(k) => k,
            None => continue,
        };
        match req.object_label(k, &mut value) {
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(e) => return Status::error(e.as_str()),
        }
        if n > 0 {
            missing.push_str(", ");
        }
        missing.push_str(k);
        n += 1;
    }
    if n == 0 {
        return Status::OK;
    }
    let mut res = [0u8; 256];
    let resource = req.resource(&mut res).unwrap_or("objects");
    let resource = resource.split('/').next().unwrap_or(resource); // pods/status is still a pod
    let mut name = StrBuf::<256>::new();
    object_name(req, &mut name);
    status!(Code::DENIED, "{} {} must carry {} {}", resource, name.as_str(), if n > 1 { "labels" } else { "label" }, missing.as_str())
}

/// Writes the quoted name, or for a CREATE with generateName the prefix it gave.
fn object_name(req: &Request, out: &mut StrBuf<256>) {
    let mut buf = [0u8; 256];
    if let Ok(n) = req.name(&mut buf) {
        if !n.is_empty() {
            let _ = write!(out, "\"{}\"", n);
            return;
        }
    }
    // Only a CREATE with generateName gets here: read it from the object.
    let mut obj = [0u8; 32 * 1024];
    let mut gen = [0u8; 256];
    let prefix = req
        .object_json(&mut obj[..])
        .ok()
        .and_then(json::parse)
        .and_then(|o| o.path(&["metadata", "generateName"]))
        .and_then(|g| g.as_str())
        .and_then(|g| g.decode(&mut gen));
    match prefix {
        Some(p) if !p.is_empty() => {
            let _ = write!(out, "\"{}*\"", p);
        }
        _ => {
            out.push_str("\"\"");
        }
    }
}

wasmkube::export_init!(init);
wasmkube::export_validate!(validate);
