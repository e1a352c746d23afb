//! Scheduler kinds: the pod, the nodes of a batch and the entry-point runners.

use crate::buf::{self, Buffer, Error};
use crate::{sys, Code, Status};

/// The pod being scheduled, admitted or probed (docs/abi.md 4.1). Accessors call the host
/// on every use; nothing is cached.
pub struct Pod {
    _p: (),
}

impl Pod {
    pub(crate) const fn new() -> Pod {
        Pod { _p: () }
    }
    /// `metadata.name`.
    pub fn name<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b str, Error> {
        buf::read_str(buf, |p, c| unsafe { sys::pod_name(p, c) })
    }
    /// `metadata.namespace`.
    pub fn namespace<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b str, Error> {
        buf::read_str(buf, |p, c| unsafe { sys::pod_namespace(p, c) })
    }
    /// The value of label `key`; `None` when the pod has no such label.
    pub fn label<'b, B: Buffer + ?Sized>(&self, key: &str, buf: &'b mut B) -> Result<Option<&'b str>, Error> {
        let (kp, kl) = buf::arg(key.as_bytes());
        buf::lookup_str(buf, |p, c| unsafe { sys::pod_label(kp, kl, p, c) })
    }
    /// The value of annotation `key`; `None` when absent.
    pub fn annotation<'b, B: Buffer + ?Sized>(&self, key: &str, buf: &'b mut B) -> Result<Option<&'b str>, Error> {
        let (kp, kl) = buf::arg(key.as_bytes());
        buf::lookup_str(buf, |p, c| unsafe { sys::pod_annotation(kp, kl, p, c) })
    }
    /// The whole pod as Kubernetes JSON (read it with [`crate::json`]).
    pub fn json<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b [u8], Error> {
        buf::read(buf, |p, c| unsafe { sys::pod_json(p, c) })
    }
    /// The pod's effective requests, read in place (one host call, no decoding).
    pub fn requests(&self) -> Result<PodRequests, Error> {
        let mut r = PodRequests::default();
        match unsafe { sys::pod_requests(&mut r as *mut PodRequests as *mut i64) } {
            n if n < 0 => Err(Error::from_code(n)),
            _ => Ok(r),
        }
    }
    /// The names of the extended resources the pod requests, each followed by `\n`
    /// (iterate with `.lines()`).
    pub fn scalar_names<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b str, Error> {
        buf::read_str(buf, |p, c| unsafe { sys::pod_scalar_names(p, c) })
    }
    /// The pod's request of an extended resource (0 when none).
    pub fn scalar_request(&self, name: &str) -> i64 {
        let (np, nl) = buf::arg(name.as_bytes());
        unsafe { sys::pod_scalar_request(np, nl) }
    }
}

/// The `pod_requests` record: the pod's effective request (`max(sum(app), max(init)) +
/// overhead`); the non-zero fields count 100m cpu and 200Mi memory for containers that
/// request nothing. cpu in millicores, memory and storage in bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodRequests {
    /// cpu, millicores.
    pub milli_cpu: i64,
    /// memory, bytes.
    pub memory: i64,
    /// ephemeral storage, bytes.
    pub ephemeral_storage: i64,
    /// cpu with the non-zero default, millicores.
    pub nonzero_milli_cpu: i64,
    /// memory with the non-zero default, bytes.
    pub nonzero_memory: i64,
}

/// An amount of resources: cpu in millicores, memory and ephemeral storage in bytes, pods
/// as a count.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    /// cpu, millicores.
    pub milli_cpu: i64,
    /// memory, bytes.
    pub memory: i64,
    /// ephemeral storage, bytes.
    pub ephemeral_storage: i64,
    /// pods (allocatable: the node's pod capacity; requested: how many it runs).
    pub pods: i64,
}

/// The `node_resources` record: a node's allocatable resources and what the pods bound or
/// assumed on it request. Its layout is the ABI's (10 little-endian i64), so the host
/// writes it in place.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeResources {
    /// What the node offers.
    pub allocatable: Resources,
    /// The sum of its pods' requests; `requested.pods` counts the pods.
    pub requested: Resources,
    /// Requested cpu counting 100m for pods that request none.
    pub nonzero_requested_milli_cpu: i64,
    /// Requested memory counting 200Mi for pods that request none.
    pub nonzero_requested_memory: i64,
}

/// One node of the current batch, by index.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    index: i32,
}

impl Node {
    pub(crate) const fn at(index: i32) -> Node {
        Node { index }
    }
    /// The node's index in the batch (0 .. count-1).
    pub fn index(&self) -> i32 {
        self.index
    }
    /// `metadata.name` (also in PostFilter and NormalizeScore). Node names are at most 253
    /// bytes: a `[u8; 256]` always fits.
    pub fn name<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b str, Error> {
        let i = self.index;
        buf::read_str(buf, |p, c| unsafe { sys::node_name(i, p, c) })
    }
    /// The value of label `key`; `None` when the node has no such label.
    pub fn label<'b, B: Buffer + ?Sized>(&self, key: &str, buf: &'b mut B) -> Result<Option<&'b str>, Error> {
        let (i, (kp, kl)) = (self.index, buf::arg(key.as_bytes()));
        buf::lookup_str(buf, |p, c| unsafe { sys::node_label(i, kp, kl, p, c) })
    }
    /// The node's taints.
    pub fn taints<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<Taints<'b>, Error> {
        let i = self.index;
        buf::read_str(buf, |p, c| unsafe { sys::node_taints(i, p, c) }).map(|s| Taints { lines: s })
    }
    /// The node's resources, read in place.
    pub fn resources(&self) -> Result<NodeResources, Error> {
        let mut r = NodeResources::default();
        match unsafe { sys::node_resources(self.index, &mut r as *mut NodeResources as *mut i64) } {
            n if n < 0 => Err(Error::from_code(n)),
            _ => Ok(r),
        }
    }
    /// The node's allocatable amount of an extended resource (0 when none).
    pub fn scalar_allocatable(&self, name: &str) -> i64 {
        let (np, nl) = buf::arg(name.as_bytes());
        unsafe { sys::node_scalar(self.index, 0, np, nl) }
    }
    /// What the node's pods request of an extended resource (0 when none).
    pub fn scalar_requested(&self, name: &str) -> i64 {
        let (np, nl) = buf::arg(name.as_bytes());
        unsafe { sys::node_scalar(self.index, 1, np, nl) }
    }
    /// The whole node as Kubernetes JSON. Costs a copy of a few KiB per node: prefer the
    /// accessors in Filter and Score.
    pub fn json<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b [u8], Error> {
        let i = self.index;
        buf::read(buf, |p, c| unsafe { sys::node_json(i, p, c) })
    }
    /// PostFilter only: the code Filter rejected the node with.
    pub fn filter_code(&self) -> Code {
        Code(unsafe { sys::node_filter_code(self.index) })
    }
}

/// A node taint, borrowed from the `node_taints` text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taint<'a> {
    /// The taint's key.
    pub key: &'a str,
    /// The value ("" when none).
    pub value: &'a str,
    /// NoSchedule, PreferNoSchedule or NoExecute.
    pub effect: &'a str,
}

/// An iterator over a node's taints.
#[derive(Clone, Debug)]
pub struct Taints<'a> {
    lines: &'a str,
}

impl<'a> Iterator for Taints<'a> {
    type Item = Taint<'a>;
    fn next(&mut self) -> Option<Taint<'a>> {
        loop {
            if self.lines.is_empty() {
                return None;
            }
            let (line, rest) = match self.lines.find('\n') {
                Some(i) => (&self.lines[..i], &self.lines[i + 1..]),
                None => (self.lines, ""),
            };
            self.lines = rest;
            if line.is_empty() {
                continue;
            }
            let (kv, effect) = match line.rfind(':') {
                Some(i) => (&line[..i], &line[i + 1..]),
                None => (line, ""),
            };
            let (key, value) = match kv.find('=') {
                Some(i) => (&kv[..i], &kv[i + 1..]),
                None => (kv, ""),
            };
            return Some(Taint { key, value, effect });
        }
    }
}

/// The nodes of a batch call (PreScore: the feasible nodes; PostFilter: the rejected ones).
#[derive(Clone, Copy, Debug)]
pub struct Nodes {
    count: i32,
}

impl Nodes {
    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.count.max(0) as usize
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count <= 0
    }
    /// The node at index i.
    pub fn get(&self, i: usize) -> Option<Node> {
        if i < self.len() {
            Some(Node { index: i as i32 })
        } else {
            None
        }
    }
    /// Every node, in index order.
    pub fn iter(&self) -> impl Iterator<Item = Node> {
        (0..self.count.max(0)).map(|index| Node { index })
    }
}

/// The raw scores of a NormalizeScore call.
#[derive(Clone, Copy, Debug)]
pub struct Scores {
    count: i32,
}

impl Scores {
    /// The number of scored nodes.
    pub fn len(&self) -> usize {
        self.count.max(0) as usize
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count <= 0
    }
    /// The raw score of node i, as Score set it.
    pub fn get(&self, i: usize) -> i64 {
        unsafe { sys::score_get(i as i32) }
    }
    /// Sets the final score of node i (in [0, 100]).
    pub fn set(&self, i: usize, score: i64) {
        unsafe { sys::node_score(i as i32, score) }
    }
    /// Node i (only its name is available).
    pub fn node(&self, i: usize) -> Node {
        Node { index: i as i32 }
    }
}

/// Scales the raw scores linearly so that the highest becomes 100 and the lowest 0 (all
/// equal: 100). Use it as `export_normalizescore!(|_, s| wasmkube::normalize_min_max(s))`.
pub fn normalize_min_max(scores: &Scores) -> Status {
    let n = scores.len();
    if n == 0 {
        return Status::OK;
    }
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for i in 0..n {
        let s = scores.get(i);
        lo = lo.min(s);
        hi = hi.max(s);
    }
    // i128: raw scores may be any i64, and (s - lo) * 100 must not overflow.
    let span = hi as i128 - lo as i128;
    for i in 0..n {
        let s = if span == 0 { 100 } else { ((scores.get(i) as i128 - lo as i128) * 100 / span) as i64 };
        scores.set(i, s);
    }
    Status::OK
}

/// PreFilter: adds a node to the set Filter evaluates for this pod (when never called,
/// every node is evaluated).
pub fn restrict_to(node_name: &str) {
    let (p, l) = buf::arg(node_name.as_bytes());
    unsafe { sys::prefilter_node(p, l) }
}

/// PostFilter: nominates a node for the pod (return `Status::OK` after it).
pub fn nominate(node_name: &str) {
    let (p, l) = buf::arg(node_name.as_bytes());
    unsafe { sys::nominate(p, l) }
}

#[doc(hidden)]
pub fn run_prefilter(f: impl FnOnce(&Pod) -> Status) -> i32 {
    crate::__rt::finish(f(&Pod::new()))
}

#[doc(hidden)]
pub fn run_filter(count: i32, f: impl Fn(&Pod, &Node) -> Status) -> i32 {
    let pod = Pod::new();
    for index in 0..count {
        let st = f(&pod, &Node { index });
        if st.is_success() {
            continue; // accepted nodes cost no crossing
        }
        let r = st.reason();
        let r = if r.is_empty() { "rejected" } else { r };
        let (p, l) = buf::arg(r.as_bytes());
        unsafe { sys::node_status(index, st.code().0, p, l) }
    }
    0
}

#[doc(hidden)]
pub fn run_postfilter(count: i32, f: impl FnOnce(&Pod, &Nodes) -> Status) -> i32 {
    crate::__rt::finish(f(&Pod::new(), &Nodes { count }))
}

#[doc(hidden)]
pub fn run_prescore(count: i32, f: impl FnOnce(&Pod, &Nodes) -> Status) -> i32 {
    crate::__rt::finish(f(&Pod::new(), &Nodes { count }))
}

#[doc(hidden)]
pub fn run_score(count: i32, f: impl Fn(&Pod, &Node) -> Result<i64, Status>) -> i32 {
    let pod = Pod::new();
    for index in 0..count {
        match f(&pod, &Node { index }) {
            Ok(s) => unsafe { sys::node_score(index, s) },
            Err(st) => {
                crate::set_reason(st.reason());
                return Code::ERROR.0;
            }
        }
    }
    0
}

#[doc(hidden)]
pub fn run_normalizescore(count: i32, f: impl FnOnce(&Pod, &Scores) -> Status) -> i32 {
    crate::__rt::finish(f(&Pod::new(), &Scores { count }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_taints() {
        let t: [Taint; 2] = {
            let mut it = Taints { lines: "a=b:NoSchedule\n\nk:NoExecute\n" };
            [it.next().unwrap(), it.next().unwrap()]
        };
        assert_eq!(t[0], Taint { key: "a", value: "b", effect: "NoSchedule" });
        assert_eq!(t[1], Taint { key: "k", value: "", effect: "NoExecute" });
        assert_eq!(Taints { lines: "" }.count(), 0);
    }

    #[test]
    fn records_have_the_abi_layout() {
        assert_eq!(core::mem::size_of::<PodRequests>(), 40);
        assert_eq!(core::mem::size_of::<NodeResources>(), 80);
    }
}
