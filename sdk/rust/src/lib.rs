//! wasmkube: the Rust guest SDK for wasmkube plugins ([ABI v1](../../../docs/abi.md)).
//!
//! A plugin is a `cdylib` crate for `wasm32-unknown-unknown` that depends on this crate by
//! path and names its entry points with one macro per kind:
//!
//! ```ignore
//! #![no_std]
//! use wasmkube::{Node, Pod, Status};
//!
//! fn filter(_pod: &Pod, node: &Node) -> Status {
//!     let mut buf = [0u8; 64];
//!     match node.label("disk", &mut buf) {
//!         Ok(Some("ssd")) => Status::OK,
//!         Ok(_) => Status::reject("node has no ssd"),
//!         Err(e) => Status::error(e.as_str()),
//!     }
//! }
//! wasmkube::export_filter!(filter);
//! ```
//!
//! The crate exports `wasmkube_abi_version` itself and, with the default `panic-handler`
//! feature, makes a panic a trap (the host contains it as a plugin failure). It needs no
//! allocator: every read goes into a buffer the caller passes (section 2's `(buf, cap)`
//! rule is in [`Buffer`]), records are read in place, and status reasons are `'static`
//! strings or formatted into a fixed buffer ([`status!`]).
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;

mod buf;
pub mod json;
pub mod sys;

pub mod admission;
pub mod binding;
pub mod kubelet;
mod sched;

pub use buf::{Buffer, Error, FixedBuf, StrBuf};
pub use sched::{normalize_min_max, nominate, restrict_to, Node, NodeResources, Nodes, Pod, PodRequests, Resources, Scores, Taint, Taints};

use core::cell::UnsafeCell;
use core::fmt;

/// The version of docs/abi.md this crate implements.
pub const ABI_VERSION: i32 = 1;

#[export_name = "wasmkube_abi_version"]
extern "C" fn __wasmkube_abi_version() -> i32 {
    ABI_VERSION
}

#[cfg(feature = "panic-handler")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// The status code of an entry point (docs/abi.md section 1.3). The kinds give code 2 their
/// own names: Unschedulable (scheduler), Denied (admission), Failure (probe).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code(pub i32);

impl Code {
    /// The call succeeded: the node fits, the request is allowed, the probe passed.
    pub const SUCCESS: Code = Code(0);
    /// The plugin failed; its failurePolicy decides.
    pub const ERROR: Code = Code(1);
    /// Scheduler: the node does not fit (preemption may help).
    pub const UNSCHEDULABLE: Code = Code(2);
    /// Admission: the request is denied.
    pub const DENIED: Code = Code(2);
    /// Probe: the probe failed.
    pub const FAILURE: Code = Code(2);
    /// Scheduler: the node does not fit and preemption cannot help.
    pub const UNRESOLVABLE: Code = Code(3);
    /// PreFilter and PreScore: nothing to do for this pod; its Filter/Score are skipped.
    pub const SKIP: Code = Code(5);
    /// Permit: hold the pod (after [`binding::permit_wait`]) until a later Permit allows it.
    pub const WAIT: Code = Code(4);
}

/// The longest formatted reason a [`Status`] keeps (the host keeps 1 KiB of any reason;
/// `'static` reasons are not cut by the SDK).
pub const REASON_CAP: usize = 512;

#[derive(Clone)]
enum Reason {
    Static(&'static str),
    Inline(StrBuf<REASON_CAP>),
}

/// A verdict: a code and a reason. `Status::OK` costs nothing to return; a formatted
/// reason ([`status!`], [`Status::copied`]) is kept inline, without allocating.
#[derive(Clone)]
pub struct Status {
    code: Code,
    reason: Reason,
}

impl Status {
    /// Success with no reason.
    pub const OK: Status = Status { code: Code::SUCCESS, reason: Reason::Static("") };

    /// A status with a code and a static reason.
    pub const fn new(code: Code, reason: &'static str) -> Status {
        Status { code, reason: Reason::Static(reason) }
    }
    /// Scheduler: Unschedulable, with the reason users read in "0/N nodes are available".
    pub const fn reject(reason: &'static str) -> Status {
        Status::new(Code::UNSCHEDULABLE, reason)
    }
    /// Scheduler: UnschedulableAndUnresolvable (preemption cannot help).
    pub const fn unresolvable(reason: &'static str) -> Status {
        Status::new(Code::UNRESOLVABLE, reason)
    }
    /// Admission: denied; the reason is the client's message (a reason that starts with a
    /// field path and a colon becomes a 422 on that field).
    pub const fn deny(reason: &'static str) -> Status {
        Status::new(Code::DENIED, reason)
    }
    /// Probe: failed; the reason is the `Unhealthy` event's message.
    pub const fn failure(reason: &'static str) -> Status {
        Status::new(Code::FAILURE, reason)
    }
    /// The plugin cannot decide (bad args, unparsable data): its failurePolicy applies.
    pub const fn error(reason: &'static str) -> Status {
        Status::new(Code::ERROR, reason)
    }
    /// PreFilter/PreScore: skip this plugin's Filter/Score for the pod.
    pub const fn skip() -> Status {
        Status::new(Code::SKIP, "")
    }
    /// A status whose reason is copied from a borrowed string (a label value read into a
    /// local buffer), cut at [`REASON_CAP`] bytes.
    pub fn copied(code: Code, reason: &str) -> Status {
        let mut s = StrBuf::new();
        s.push_str(reason);
        Status { code, reason: Reason::Inline(s) }
    }
    /// A status with a formatted reason; [`status!`] is the short way to write it.
    pub fn format(code: Code, args: fmt::Arguments<'_>) -> Status {
        let mut s = StrBuf::new();
        let _ = fmt::write(&mut s, args);
        Status { code, reason: Reason::Inline(s) }
    }
    /// The status code.
    pub fn code(&self) -> Code {
        self.code
    }
    /// The reason ("" when none).
    pub fn reason(&self) -> &str {
        match &self.reason {
            Reason::Static(s) => s,
            Reason::Inline(s) => s.as_str(),
        }
    }
    /// Whether the code is Success.
    pub fn is_success(&self) -> bool {
        self.code == Code::SUCCESS
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Status({}, {:?})", self.code.0, self.reason())
    }
}

/// A [`Status`] with a formatted reason: `status!(Code::DENIED, "missing label {}", key)`.
#[macro_export]
macro_rules! status {
    ($code:expr, $($arg:tt)*) => {
        $crate::Status::format($code, ::core::format_args!($($arg)*))
    };
}

/// Sets the reason of the current entry point's own status. The export macros do it for
/// the [`Status`] your function returns; call it yourself only from raw exports.
pub fn set_reason(reason: &str) {
    if reason.is_empty() {
        return;
    }
    let (p, l) = buf::arg(reason.as_bytes());
    unsafe { sys::status_reason(p, l) }
}

/// Reads the plugin's args (`pluginConfig[].args`, or the policy's `args`) as JSON; empty
/// when none were given. Args never change for an instance: read them once, in the
/// function of [`export_init!`], and keep what you need in a [`Once`].
pub fn args<B: Buffer + ?Sized>(buf: &mut B) -> Result<&[u8], Error> {
    buf::read(buf, |p, c| unsafe { sys::args(p, c) })
}

/// Cycle state: bytes the host keeps for the current pod's scheduling cycle, private to
/// the plugin, readable by whichever instance serves a later call of the cycle. Write in
/// PreFilter/PreScore (once per cycle); Filter/Score batches should only read.
pub mod state {
    use crate::buf::{self, Buffer, Error};
    use crate::sys;

    /// The bytes stored under `key` in this cycle; `None` when the key was never set.
    pub fn get<'b, B: Buffer + ?Sized>(key: &str, buf: &'b mut B) -> Result<Option<&'b [u8]>, Error> {
        let (kp, kl) = buf::arg(key.as_bytes());
        buf::lookup(buf, |p, c| unsafe { sys::state_get(kp, kl, p, c) })
    }

    /// Stores `value` under `key` for the rest of the cycle. `Err(Unavailable)` when the
    /// kind has no cycle state. A value over 1 MiB ends the call as a garbage result.
    pub fn set(key: &str, value: &[u8]) -> Result<(), Error> {
        let (kp, kl) = buf::arg(key.as_bytes());
        let (vp, vl) = buf::arg(value);
        match unsafe { sys::state_set(kp, kl, vp, vl) } {
            0 => Ok(()),
            n => Err(Error::from_code(n)),
        }
    }
}

/// Log levels of [`log`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Level {
    /// Debug.
    Debug = 0,
    /// Info.
    Info = 1,
    /// Warn.
    Warn = 2,
    /// Error.
    Error = 3,
}

/// Writes one line to the host's log, tagged with the plugin's name (at most 100 lines per
/// call are kept; lines over 4 KiB are cut).
pub fn log(level: Level, msg: &str) {
    let (p, l) = buf::arg(msg.as_bytes());
    unsafe { sys::log(level as i32, p, l) }
}

/// [`log`] with formatting into a 1 KiB stack buffer: `log!(Level::Info, "zones {}", n)`.
#[macro_export]
macro_rules! log {
    ($level:expr, $($arg:tt)*) => {{
        let mut line = $crate::StrBuf::<1024>::new();
        let _ = ::core::fmt::write(&mut line, ::core::format_args!($($arg)*));
        $crate::log($level, line.as_str());
    }};
}

/// A value set once per instance (in the init function) and read by every later call:
/// parsed args. An instance runs one call at a time on one thread, so no lock is needed;
/// a value once set is never replaced, so references from [`Once::get`] stay valid.
/// Never keep per-pod data here: any instance may serve any call (use [`state`]).
pub struct Once<T> {
    v: UnsafeCell<Option<T>>,
}

// SAFETY: a wasm32 module without the atomics feature has exactly one thread, and set never
// replaces a value that get may have lent out.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
unsafe impl<T> Sync for Once<T> {}

impl<T> Once<T> {
    /// An empty cell, for a `static`.
    pub const fn new() -> Self {
        Once { v: UnsafeCell::new(None) }
    }
    /// Sets the value; gives it back when the cell is already set.
    pub fn set(&self, v: T) -> Result<(), T> {
        // SAFETY: single-threaded (see Sync); no reference to the None exists.
        let slot = unsafe { &mut *self.v.get() };
        if slot.is_some() {
            return Err(v);
        }
        *slot = Some(v);
        Ok(())
    }
    /// The value, once set.
    pub fn get(&self) -> Option<&T> {
        // SAFETY: a set value is never changed again.
        unsafe { (*self.v.get()).as_ref() }
    }
}

/// A global buffer for values too large for the stack (an object's JSON, up to the API
/// server's limit), lent to one caller at a time. It costs nothing until used: the array is
/// zero-initialised memory of the module, not code.
///
/// ```ignore
/// static OBJ: Scratch<{ 2 << 20 }> = Scratch::new();
/// let has_labels = OBJ.with(|buf| req.object_json(buf).ok().map(|o| o.len() > 0));
/// ```
pub struct Scratch<const N: usize> {
    buf: UnsafeCell<[u8; N]>,
    busy: core::cell::Cell<bool>,
}

// SAFETY: as for Once; `with` refuses a second borrow while one is lent.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
unsafe impl<const N: usize> Sync for Scratch<N> {}

impl<const N: usize> Scratch<N> {
    /// A buffer of N bytes, for a `static`.
    pub const fn new() -> Self {
        Scratch { buf: UnsafeCell::new([0; N]), busy: core::cell::Cell::new(false) }
    }
    /// Runs f with the buffer; `None` (without running f) when it is already lent (f
    /// itself called `with` on the same buffer).
    pub fn with<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        if self.busy.replace(true) {
            return None;
        }
        // SAFETY: busy guarantees this is the only borrow; a panic inside f traps and the
        // host discards the instance, so busy never stays set for a later call.
        let r = f(unsafe { &mut *self.buf.get() });
        self.busy.set(false);
        Some(r)
    }
}

#[doc(hidden)]
pub mod __rt {
    pub use crate::admission::{run_mutate, run_validate};
    pub use crate::kubelet::{run_prestop, run_probe};
    pub use crate::sched::{run_filter, run_normalizescore, run_postfilter, run_prefilter, run_prescore, run_score};
    pub use crate::binding::{run_events, run_hint, run_node_point, run_sign, run_unreserve};

    /// Reports st as the entry point's own status.
    pub fn finish(st: crate::Status) -> i32 {
        if !st.is_success() {
            crate::set_reason(st.reason());
        }
        st.code().0
    }

    pub fn run_init(f: impl FnOnce() -> crate::Status) -> i32 {
        let st = f();
        if st.is_success() {
            return 0;
        }
        crate::set_reason(st.reason());
        1
    }
}

/// Exports `wasmkube_init` (docs/abi.md 1.2): `fn() -> Status`, run once per instance with
/// the args readable. A non-success status rejects the plugin at load time with its reason.
#[macro_export]
macro_rules! export_init {
    ($f:expr) => {
        #[export_name = "wasmkube_init"]
        pub extern "C" fn __wasmkube_init() -> i32 {
            $crate::__rt::run_init($f)
        }
    };
}

/// Exports `wasmkube_prefilter`: `fn(&Pod) -> Status`, once per scheduling cycle. Return
/// `Status::skip()` to skip this plugin's Filter, a rejection for an unschedulable pod;
/// [`restrict_to`] limits the nodes Filter evaluates.
#[macro_export]
macro_rules! export_prefilter {
    ($f:expr) => {
        #[export_name = "wasmkube_prefilter"]
        pub extern "C" fn __wasmkube_prefilter() -> i32 {
            $crate::__rt::run_prefilter($f)
        }
    };
}

/// Exports `wasmkube_filter`: `fn(&Pod, &Node) -> Status`, called for each node of the
/// batch. A non-success status rejects the node with its reason (an empty reason becomes
/// "rejected"); Code::ERROR is a plugin failure for that node only.
#[macro_export]
macro_rules! export_filter {
    ($f:expr) => {
        #[export_name = "wasmkube_filter"]
        pub extern "C" fn __wasmkube_filter(count: i32) -> i32 {
            $crate::__rt::run_filter(count, $f)
        }
    };
}

/// Exports `wasmkube_postfilter`: `fn(&Pod, &Nodes) -> Status`, when no node passed Filter.
/// Nominate with [`nominate`] and return OK, or return `Status::reject` when nothing helps.
#[macro_export]
macro_rules! export_postfilter {
    ($f:expr) => {
        #[export_name = "wasmkube_postfilter"]
        pub extern "C" fn __wasmkube_postfilter(count: i32) -> i32 {
            $crate::__rt::run_postfilter(count, $f)
        }
    };
}

/// Exports `wasmkube_prescore`: `fn(&Pod, &Nodes) -> Status`, once per cycle with every
/// feasible node. `Status::skip()` skips this plugin's Score for the pod.
#[macro_export]
macro_rules! export_prescore {
    ($f:expr) => {
        #[export_name = "wasmkube_prescore"]
        pub extern "C" fn __wasmkube_prescore(count: i32) -> i32 {
            $crate::__rt::run_prescore(count, $f)
        }
    };
}

/// Exports `wasmkube_score`: `fn(&Pod, &Node) -> Result<i64, Status>`, called for each node
/// of the batch. Without NormalizeScore a score must be in [0, 100]; an `Err` fails the
/// whole call with its reason. Never normalise within the batch: batches are arbitrary.
#[macro_export]
macro_rules! export_score {
    ($f:expr) => {
        #[export_name = "wasmkube_score"]
        pub extern "C" fn __wasmkube_score(count: i32) -> i32 {
            $crate::__rt::run_score(count, $f)
        }
    };
}

/// Exports `wasmkube_normalizescore`: `fn(&Pod, &Scores) -> Status`, once with every raw
/// score; write the final scores (in [0, 100]) with [`Scores::set`], or use
/// [`normalize_min_max`]. Needs [`export_score!`] in the same module.
#[macro_export]
macro_rules! export_normalizescore {
    ($f:expr) => {
        #[export_name = "wasmkube_normalizescore"]
        pub extern "C" fn __wasmkube_normalizescore(count: i32) -> i32 {
            $crate::__rt::run_normalizescore(count, $f)
        }
    };
}

/// Exports `wasmkube_validate`: `fn(&admission::Request) -> Status` (OK allows,
/// `Status::deny` denies with the message).
#[macro_export]
macro_rules! export_validate {
    ($f:expr) => {
        #[export_name = "wasmkube_validate"]
        pub extern "C" fn __wasmkube_validate() -> i32 {
            $crate::__rt::run_validate($f)
        }
    };
}

/// Exports `wasmkube_mutate`: `fn(&admission::Request) -> Status`; set the JSON Patch with
/// [`admission::Request::set_patch`] and return OK.
#[macro_export]
macro_rules! export_mutate {
    ($f:expr) => {
        #[export_name = "wasmkube_mutate"]
        pub extern "C" fn __wasmkube_mutate() -> i32 {
            $crate::__rt::run_mutate($f)
        }
    };
}

/// Exports `wasmkube_probe`: `fn(&kubelet::Container) -> Status` (OK passes,
/// `Status::failure` fails the probe with the event's reason).
#[macro_export]
macro_rules! export_probe {
    ($f:expr) => {
        #[export_name = "wasmkube_probe"]
        pub extern "C" fn __wasmkube_probe() -> i32 {
            $crate::__rt::run_probe($f)
        }
    };
}

/// Exports `wasmkube_prestop`: `fn(&kubelet::Container) -> Status` (OK when the container
/// may be stopped; an error is a `FailedPreStopHook` event). SIGTERM follows either way.
#[macro_export]
macro_rules! export_prestop {
    ($f:expr) => {
        #[export_name = "wasmkube_prestop"]
        pub extern "C" fn __wasmkube_prestop() -> i32 {
            $crate::__rt::run_prestop($f)
        }
    };
}

/// Exports `wasmkube_reserve` and `wasmkube_unreserve` (docs/abi.md 1.4): `fn(&Pod, &Node)
/// -> Status` and `fn(&Pod, &Node)`, for the chosen node. Unreserve runs whenever the pod
/// does not end bound, also when this Reserve refused or never ran: undo exactly what it
/// did (keep a marker in [`state`] before counting).
#[macro_export]
macro_rules! export_reserve {
    ($reserve:expr, $unreserve:expr) => {
        #[export_name = "wasmkube_reserve"]
        pub extern "C" fn __wasmkube_reserve() -> i32 {
            $crate::__rt::run_node_point($reserve)
        }
        #[export_name = "wasmkube_unreserve"]
        pub extern "C" fn __wasmkube_unreserve() -> i32 {
            $crate::__rt::run_unreserve($unreserve)
        }
    };
}

/// Exports `wasmkube_permit`: `fn(&Pod, &Node) -> Status`. Return `Status::OK`, a
/// rejection, or [`binding::wait`]'s status after naming the timeout and group.
#[macro_export]
macro_rules! export_permit {
    ($f:expr) => {
        #[export_name = "wasmkube_permit"]
        pub extern "C" fn __wasmkube_permit() -> i32 {
            $crate::__rt::run_node_point($f)
        }
    };
}

/// Exports `wasmkube_prebind`: `fn(&Pod, &Node) -> Status`; `Status::reject` sends the pod
/// back to the queue as unschedulable ("not now").
#[macro_export]
macro_rules! export_prebind {
    ($f:expr) => {
        #[export_name = "wasmkube_prebind"]
        pub extern "C" fn __wasmkube_prebind() -> i32 {
            $crate::__rt::run_node_point($f)
        }
    };
}

/// Exports `wasmkube_postbind`: `fn(&Pod, &Node)`, once the binding is written.
#[macro_export]
macro_rules! export_postbind {
    ($f:expr) => {
        #[export_name = "wasmkube_postbind"]
        pub extern "C" fn __wasmkube_postbind() -> i32 {
            $crate::__rt::run_unreserve($f)
        }
    };
}

/// Exports `wasmkube_events`: `fn()` that calls [`binding::register_event`] for each event
/// that may help a pod this plugin rejected.
#[macro_export]
macro_rules! export_events {
    ($f:expr) => {
        #[export_name = "wasmkube_events"]
        pub extern "C" fn __wasmkube_events() -> i32 {
            $crate::__rt::run_events($f)
        }
    };
}

/// Exports `wasmkube_sign` (docs/abi.md 1.5): `fn(&Pod) -> bool` that calls
/// [`binding::sign_fragment`] for each part of the pod the plugin's Filter and Score
/// verdicts read and returns true, or false for a pod it cannot sign (Unsignable).
#[macro_export]
macro_rules! export_sign {
    ($f:expr) => {
        #[export_name = "wasmkube_sign"]
        pub extern "C" fn __wasmkube_sign() -> i32 {
            $crate::__rt::run_sign($f)
        }
    };
}

/// Exports `wasmkube_queueing_hint`: `fn(&Pod, &binding::Event) -> binding::Hint`.
#[macro_export]
macro_rules! export_queueing_hint {
    ($f:expr) => {
        #[export_name = "wasmkube_queueing_hint"]
        pub extern "C" fn __wasmkube_queueing_hint() -> i32 {
            $crate::__rt::run_hint($f)
        }
    };
}
