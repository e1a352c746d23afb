//! default-labels: a wasmkube mutating admission policy in Rust on the wasmkube SDK
//! (sdk/rust). A new or updated object gets each label of the args
//! ({"labels": {"team": "platform"}}) that it does not carry yet, with a JSON Patch built in
//! a fixed buffer:
//!
//! ```json
//! [{"op":"add","path":"/metadata/labels","value":{}},
//!  {"op":"add","path":"/metadata/labels/team","value":"platform"}]
//! ```
//!
//! (the first operation only when the object has no labels at all). A label it set is
//! recorded as the audit annotation `<policy>/defaulted`.
#![no_std]

use core::fmt::Write;
use wasmkube::admission::{Operation, Request};
use wasmkube::{json, status, Code, Error, FixedBuf, Once, Scratch, Status, StrBuf};

static ARGS: Once<FixedBuf<4096>> = Once::new();

/// Whether s is made of the characters label keys and values may hold, so it needs no
/// escaping in JSON (a key's '/' is escaped in the JSON Pointer as ~1).
fn label_text(s: &str, key: bool) -> bool {
    s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.' || (key && c == b'/'))
}

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
    let map = match labels(args.as_bytes()) {
        Some(m) if m.kind() == json::Kind::Object && m.members().next().is_some() => m,
        _ => return Status::error(r#"args.labels: a map of at least one label is required, e.g. {"labels": {"team": "platform"}}"#),
    };
    for (k, v) in map.members() {
        let key = match k.as_plain() {
            Some(key) if !key.is_empty() && key.len() <= 317 && label_text(key, true) => key,
            _ => return Status::error("args.labels: a key is not a label key"),
        };
        match v.as_str().and_then(|s| s.as_plain()) {
            Some(val) if val.len() <= 63 && label_text(val, false) => {}
            _ => return status!(Code::ERROR, "args.labels.{}: the value must be a label value (a string)", key),
        }
    }
    let _ = ARGS.set(args);
    Status::OK
}

fn mutate(req: &Request) -> Status {
    match req.operation() {
        Ok(Operation::Create) | Ok(Operation::Update) => {}
        Ok(_) => return Status::OK,
        Err(e) => return Status::error(e.as_str()),
    }
    let args = match ARGS.get() {
        Some(a) => a,
        None => return Status::error("args were not read"),
    };
    let mut patch = StrBuf::<8192>::new();
    let mut added = StrBuf::<1024>::new();
    let mut value = [0u8; 64];
    for (k, v) in labels(args.as_bytes()).into_iter().flat_map(|m| m.members()) {
        // init checked that keys and values are plain label text.
        let (key, val) = match (k.as_plain(), v.as_str().and_then(|s| s.as_plain())) {
            (Some(key), Some(val)) => (key, val),
            _ => continue,
        };
        match req.object_label(key, &mut value) {
            Ok(Some(_)) => continue, // the object's own value wins
            Ok(None) => {}
            Err(e) => return Status::error(e.as_str()),
        }
        if patch.is_empty() {
            patch.push_str("[");
            match has_labels(req) {
                Ok(true) => {}
                Ok(false) => {
                    patch.push_str(r#"{"op":"add","path":"/metadata/labels","value":{}},"#);
                }
                Err(e) => return Status::error(e.as_str()),
            }
        } else {
            patch.push_str(",");
            added.push_str(",");
        }
        patch.push_str(r#"{"op":"add","path":"/metadata/labels/"#);
        for (i, part) in key.split('/').enumerate() {
            if i > 0 {
                patch.push_str("~1");
            }
            patch.push_str(part);
        }
        let _ = write!(patch, r#"","value":"{}"}}"#, val);
        added.push_str(key);
    }
    if patch.is_empty() {
        return Status::OK; // nothing to add: no patch
    }
    if !patch.push_str("]") {
        return Status::error("the patch is longer than 8 KiB");
    }
    req.set_patch(patch.as_str().as_bytes());
    req.audit_annotation("defaulted", added.as_str());
    Status::OK
}

// The new object's JSON, for has_labels: up to 2 MiB (etcd stores at most 1.5 MiB), in a
// global because it would not fit the 1 MiB stack.
static OBJECT: Scratch<{ 2 << 20 }> = Scratch::new();

/// Whether the new object has a metadata.labels map.
fn has_labels(req: &Request) -> Result<bool, Error> {
    OBJECT
        .with(|buf| {
            let o = req.object_json(buf)?;
            Ok(json::parse(o).and_then(|v| v.path(&["metadata", "labels"])).map_or(false, |l| l.kind() == json::Kind::Object))
        })
        .unwrap_or(Err(Error::Unavailable))
}

wasmkube::export_init!(init);
wasmkube::export_mutate!(mutate);
