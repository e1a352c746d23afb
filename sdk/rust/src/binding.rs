//! The binding cycle and queueing hints (docs/abi.md 1.4 and 4.8): the chosen node, the
//! plugin's shared counters, a Permit's wait and the pods it holds, and the events a hint
//! is asked about.

use crate::buf::{self, Buffer, Error};
use crate::sched::{Node, Pod};
use crate::{sys, Code, Status};

impl Pod {
    /// `metadata.uid` (what a Permit allows or rejects a waiting pod by).
    pub fn uid<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b str, Error> {
        buf::read_str(buf, |p, c| unsafe { sys::pod_uid(p, c) })
    }
}

/// The node chosen for the pod (node 0: name, labels, taints, JSON; not its resources).
pub const fn chosen_node() -> Node {
    Node::at(0)
}

/// Adds `delta` to the plugin's shared counter `key` and returns the new value (Reserve,
/// Unreserve, Permit, PreBind and PostBind only).
pub fn shared_add(key: &str, delta: i64) -> i64 {
    let (p, l) = buf::arg(key.as_bytes());
    unsafe { sys::shared_add(p, l, delta) }
}

/// The value of the plugin's shared counter `key` (0 when never set).
pub fn shared_get(key: &str) -> i64 {
    let (p, l) = buf::arg(key.as_bytes());
    unsafe { sys::shared_get(p, l) }
}

/// Permit: hold the pod under `group` for at most `timeout_ms` (1 .. 900000); return the
/// status it gives.
pub fn wait(timeout_ms: i32, group: &str) -> Status {
    let (p, l) = buf::arg(group.as_bytes());
    unsafe { sys::permit_wait(timeout_ms, p, l) };
    Status::new(Code::WAIT, "")
}

/// Permit: the UIDs of the pods this plugin holds under `group`, one per line.
pub fn waiting_pods<'b, B: Buffer + ?Sized>(group: &str, buf: &'b mut B) -> Result<core::str::Lines<'b>, Error> {
    let (gp, gl) = buf::arg(group.as_bytes());
    buf::read_str(buf, |p, c| unsafe { sys::waiting_pods(gp, gl, p, c) }).map(|s| s.lines())
}

/// Permit: releases a waiting pod from this plugin's wait; false when it does not hold it.
pub fn allow_waiting(uid: &str) -> bool {
    let (p, l) = buf::arg(uid.as_bytes());
    unsafe { sys::waiting_allow(p, l) == 0 }
}

/// Permit: rejects a waiting pod with `reason`; false when the plugin does not hold it.
pub fn reject_waiting(uid: &str, reason: &str) -> bool {
    let (p, l) = buf::arg(uid.as_bytes());
    let (rp, rl) = buf::arg(reason.as_bytes());
    unsafe { sys::waiting_reject(p, l, rp, rl) == 0 }
}

/// Event actions, a bit set.
pub mod action {
    /// An object added.
    pub const ADD: i32 = 1;
    /// An object deleted (for a pod: also finished).
    pub const DELETE: i32 = 2;
    /// An object changed.
    pub const UPDATE: i32 = 4;
}

/// `wasmkube_events` only: registers `resource` ("Node" or "Pod") with `actions`.
pub fn register_event(resource: &str, actions: i32) {
    let (p, l) = buf::arg(resource.as_bytes());
    unsafe { sys::register_event(p, l, actions) }
}

/// `wasmkube_sign` only (docs/abi.md 1.5): one part of the pod this plugin's verdicts
/// read. Export `wasmkube_sign` with [`export_sign!`](crate::export_sign) (or by hand:
/// `#[export_name = "wasmkube_sign"] extern "C" fn() -> i32` returning 0 after the
/// fragments, or 2 for a pod it cannot sign).
pub fn sign_fragment(key: &str, value: &str) {
    unsafe { sys::sign_fragment(key.as_ptr(), key.len() as i32, value.as_ptr(), value.len() as i32) }
}

/// A hint's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    /// The event may help: the pod is retried.
    Queue,
    /// The event cannot help this pod.
    Skip,
}

/// The event a hint is asked about.
pub struct Event {
    _p: (),
}

impl Event {
    /// "Node" or "Pod".
    pub fn resource<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b str, Error> {
        buf::read_str(buf, |p, c| unsafe { sys::event_resource(p, c) })
    }
    /// One of [`action`]'s values.
    pub fn action(&self) -> i32 {
        unsafe { sys::event_action() }
    }
    /// The new object as JSON (for a Delete, the deleted one).
    pub fn object_json<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b [u8], Error> {
        buf::read(buf, |p, c| unsafe { sys::event_object_json(p, c) })
    }
    /// The object before an Update as JSON.
    pub fn old_object_json<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<Option<&'b [u8]>, Error> {
        buf::lookup(buf, |p, c| unsafe { sys::event_old_object_json(p, c) })
    }
}

#[doc(hidden)]
pub fn run_node_point(f: impl FnOnce(&Pod, &Node) -> Status) -> i32 {
    crate::__rt::finish(f(&Pod::new(), &chosen_node()))
}

#[doc(hidden)]
pub fn run_unreserve(f: impl FnOnce(&Pod, &Node)) -> i32 {
    f(&Pod::new(), &chosen_node());
    0
}

#[doc(hidden)]
pub fn run_sign(f: impl FnOnce(&Pod) -> bool) -> i32 {
    if f(&Pod::new()) {
        0
    } else {
        2
    }
}

#[doc(hidden)]
pub fn run_events(f: impl FnOnce()) -> i32 {
    f();
    0
}

#[doc(hidden)]
pub fn run_hint(f: impl FnOnce(&Pod, &Event) -> Hint) -> i32 {
    match f(&Pod::new(), &Event { _p: () }) {
        Hint::Queue => 0,
        Hint::Skip => 5,
    }
}
