//! Kubelet kinds (Probe, PreStop; docs/abi.md 4.7): one container of a running pod, and
//! HTTP/TCP towards the pod's own IP.

use crate::buf::{self, Buffer, Error};
use crate::{sys, Pod, Status};

/// Which probe a Probe call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// startupProbe
    Startup,
    /// livenessProbe
    Liveness,
    /// readinessProbe
    Readiness,
}

/// Why a network call to the pod failed: the host's `-errno` (Linux numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetError {
    /// ECONNREFUSED (111): nothing listens on the port.
    Refused,
    /// ETIMEDOUT (110): the call's time limit came first.
    TimedOut,
    /// EHOSTUNREACH (113).
    Unreachable,
    /// ECONNRESET (104).
    Reset,
    /// EINVAL (22): a port outside 1..65535, or a path that is not a plain absolute path.
    Invalid,
    /// EACCES (13): the pod has no IP yet.
    NoPodIp,
    /// EIO (5): anything else, such as a malformed response.
    Io,
    /// -2: not available in this kind (`http_post`, `sleep_ms` in a Probe).
    Unavailable,
    /// Another negative result.
    Other(i32),
}

impl NetError {
    fn from_code(n: i32) -> NetError {
        match n {
            -111 => NetError::Refused,
            -110 => NetError::TimedOut,
            -113 => NetError::Unreachable,
            -104 => NetError::Reset,
            -22 => NetError::Invalid,
            -13 => NetError::NoPodIp,
            -5 => NetError::Io,
            -2 => NetError::Unavailable,
            n => NetError::Other(n),
        }
    }
    /// A short description, fit for a status reason.
    pub fn as_str(&self) -> &'static str {
        match self {
            NetError::Refused => "connection refused",
            NetError::TimedOut => "timed out",
            NetError::Unreachable => "host unreachable",
            NetError::Reset => "connection reset",
            NetError::Invalid => "invalid port or path",
            NetError::NoPodIp => "pod has no IP yet",
            NetError::Io => "I/O error",
            NetError::Unavailable => "not available in this kind",
            NetError::Other(_) => "network error",
        }
    }
}

fn status_of(n: i32) -> Result<u16, NetError> {
    if n < 0 {
        Err(NetError::from_code(n))
    } else {
        Ok(n as u16)
    }
}

/// The container a Probe or PreStop call is about.
pub struct Container {
    _p: (),
}

impl Container {
    /// The pod accessors of section 4.1, with the pod as the kubelet last saw it.
    pub fn pod(&self) -> Pod {
        Pod::new()
    }
    /// The container's name.
    pub fn name<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b str, Error> {
        buf::read_str(buf, |p, c| unsafe { sys::container_name(p, c) })
    }
    /// The probe this call runs; `Err(Unavailable)` in PreStop.
    pub fn probe_kind(&self) -> Result<ProbeKind, Error> {
        let mut b = [0u8; 16];
        match buf::read(&mut b, |p, c| unsafe { sys::probe_kind(p, c) })? {
            b"startup" => Ok(ProbeKind::Startup),
            b"liveness" => Ok(ProbeKind::Liveness),
            b"readiness" => Ok(ProbeKind::Readiness),
            _ => Err(Error::Code(0)),
        }
    }
    /// The pod's IP (`status.podIP`).
    pub fn pod_ip<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b str, Error> {
        buf::read_str(buf, |p, c| unsafe { sys::pod_ip(p, c) })
    }
    /// Opens (and at once closes) a TCP connection to the pod's IP and `port`.
    pub fn tcp_connect(&self, port: u16) -> Result<(), NetError> {
        status_of(unsafe { sys::tcp_connect(port as i32) }).map(|_| ())
    }
    /// GET `http://<pod IP>:<port><path>`: the HTTP status (redirects are not followed).
    /// `path` must start with a single `/`.
    pub fn http_get(&self, port: u16, path: &str) -> Result<u16, NetError> {
        let (pp, pl) = buf::arg(path.as_bytes());
        status_of(unsafe { sys::http_get(port as i32, pp, pl) })
    }
    /// PreStop only: POST `body` (at most 64 KiB) to the pod; the HTTP status.
    pub fn http_post(&self, port: u16, path: &str, body: &[u8]) -> Result<u16, NetError> {
        let (pp, pl) = buf::arg(path.as_bytes());
        let (bp, bl) = buf::arg(body);
        status_of(unsafe { sys::http_post(port as i32, pp, pl, bp, bl) })
    }
    /// The body of the call's last HTTP response (cut to 64 KiB); `Err(Unavailable)`
    /// before any response.
    pub fn response_body<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b [u8], Error> {
        buf::read(buf, |p, c| unsafe { sys::response_body(p, c) })
    }
    /// The first value of header `name` of the last response; `None` when absent.
    pub fn response_header<'b, B: Buffer + ?Sized>(&self, name: &str, buf: &'b mut B) -> Result<Option<&'b str>, Error> {
        let (np, nl) = buf::arg(name.as_bytes());
        buf::lookup_str(buf, |p, c| unsafe { sys::response_header(np, nl, p, c) })
    }
    /// PreStop only: sleeps `ms` milliseconds, or less when the call's time limit comes
    /// first (`Err(TimedOut)`).
    pub fn sleep_ms(&self, ms: u32) -> Result<(), NetError> {
        let ms = if ms > i32::MAX as u32 { i32::MAX } else { ms as i32 };
        status_of(unsafe { sys::sleep_ms(ms) }).map(|_| ())
    }
}

#[doc(hidden)]
pub fn run_probe(f: impl FnOnce(&Container) -> Status) -> i32 {
    crate::__rt::finish(f(&Container { _p: () }))
}

#[doc(hidden)]
pub fn run_prestop(f: impl FnOnce(&Container) -> Status) -> i32 {
    crate::__rt::finish(f(&Container { _p: () }))
}
