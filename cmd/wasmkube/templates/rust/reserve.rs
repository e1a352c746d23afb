//! {{.Name}}: a wasmkube scheduler Reserve/Unreserve plugin in Rust on the wasmkube SDK
//! (sdk/rust): no_std, no allocator. A node labelled wasmkube.io/max-binding=N takes at
//! most N pods between Reserve and the end of their binding cycle. It counts with the
//! shared counters (one per node) and keeps a marker in cycle state, so that Unreserve (and
//! PostBind) undo exactly what its Reserve did, and nothing when Reserve refused or never
//! ran. Its queueing hint skips a Node Update (no node change lowers a count of pods in
//! flight).
#![no_std]

use wasmkube::binding::{self, action, Event, Hint};
use wasmkube::{state, Node, Pod, Status};

const MAX_BINDING: &str = "wasmkube.io/max-binding";
const COUNTED: &str = "counted";

/// The node's cap from its label: 1 to 9999, or None (no cap).
fn cap(node: &Node) -> Option<i64> {
    let mut buf = [0u8; 16];
    match node.label(MAX_BINDING, &mut buf) {
        Ok(Some(v)) if !v.starts_with('+') => v.parse().ok().filter(|n| (1..=9999).contains(n)),
        _ => None,
    }
}

fn reserve(_pod: &Pod, node: &Node) -> Status {
    let cap = match cap(node) {
        Some(c) => c,
        None => return Status::OK, // no cap
    };
    let mut name = [0u8; 256];
    let name = match node.name(&mut name) {
        Ok(n) => n,
        Err(e) => return Status::error(e.as_str()),
    };
    // The marker first: a Reserve stopped after it is undone by its Unreserve.
    if let Err(e) = state::set(COUNTED, b"1") {
        return Status::error(e.as_str());
    }
    if binding::shared_add(name, 1) > cap {
        binding::shared_add(name, -1);
        let _ = state::set(COUNTED, b"0");
        return Status::reject("too many pods binding on this node");
    }
    Status::OK
}

/// Takes the pod's 1 back if its Reserve counted it, once (Unreserve and PostBind).
fn release(_pod: &Pod, node: &Node) {
    let mut mark = [0u8; 1];
    match state::get(COUNTED, &mut mark) {
        Ok(Some(m)) if m == b"1" => {}
        _ => return,
    }
    let mut name = [0u8; 256];
    if let Ok(name) = node.name(&mut name) {
        binding::shared_add(name, -1);
        let _ = state::set(COUNTED, b"0");
    }
}

/// The events that can help a pod this plugin refused: a pod leaving, a node added or
/// changed.
fn events() {
    binding::register_event("Pod", action::DELETE);
    binding::register_event("Node", action::ADD | action::UPDATE);
}

fn hint(_pod: &Pod, ev: &Event) -> Hint {
    let mut res = [0u8; 8];
    match ev.resource(&mut res) {
        Ok("Node") if ev.action() == action::UPDATE => Hint::Skip,
        _ => Hint::Queue,
    }
}

wasmkube::export_reserve!(reserve, release);
wasmkube::export_postbind!(release);
wasmkube::export_events!(events);
wasmkube::export_queueing_hint!(hint);
