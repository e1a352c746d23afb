//! Admission kinds (Validate, Mutate; docs/abi.md 4.6): the request under admission.

use crate::buf::{self, Buffer, Error};
use crate::{sys, Pod, Status};

/// The operation of an admission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// CREATE
    Create,
    /// UPDATE
    Update,
    /// DELETE
    Delete,
    /// CONNECT
    Connect,
}

/// The API request under admission: its attributes, the new object (absent on DELETE and
/// CONNECT) and the stored one (absent on CREATE).
pub struct Request {
    _p: (),
}

macro_rules! text {
    ($(#[$doc:meta])* $name:ident, $f:ident) => {
        $(#[$doc])*
        pub fn $name<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b str, Error> {
            buf::read_str(buf, |p, c| unsafe { sys::$f(p, c) })
        }
    };
}

macro_rules! keyed {
    ($(#[$doc:meta])* $name:ident, $f:ident) => {
        $(#[$doc])*
        pub fn $name<'b, B: Buffer + ?Sized>(&self, key: &str, buf: &'b mut B) -> Result<Option<&'b str>, Error> {
            let (kp, kl) = buf::arg(key.as_bytes());
            buf::lookup_str(buf, |p, c| unsafe { sys::$f(kp, kl, p, c) })
        }
    };
}

impl Request {
    /// The request's operation.
    pub fn operation(&self) -> Result<Operation, Error> {
        let mut b = [0u8; 16];
        match buf::read(&mut b, |p, c| unsafe { sys::request_operation(p, c) })? {
            b"CREATE" => Ok(Operation::Create),
            b"UPDATE" => Ok(Operation::Update),
            b"DELETE" => Ok(Operation::Delete),
            b"CONNECT" => Ok(Operation::Connect),
            _ => Err(Error::Code(0)),
        }
    }
    text!(
        /// The object's kind: `Pod`, `Deployment`, ...
        kind, request_kind);
    text!(
        /// The resource, with its subresource after a slash: `pods`, `pods/status`.
        resource, request_resource);
    text!(
        /// The object's name (empty for a CREATE with `generateName`).
        name, request_name);
    text!(
        /// The namespace (empty for cluster-scoped objects).
        namespace, request_namespace);
    text!(
        /// The caller's user name.
        user, request_user);
    text!(
        /// The caller's groups, each followed by `\n` (iterate with `.lines()`).
        groups, request_groups);
    text!(
        /// For a Pod: the images of its init, app and ephemeral containers, in that order,
        /// each followed by `\n`. `Err(Unavailable)` for other kinds.
        pod_images, pod_images);
    keyed!(
        /// Label `key` of the new object; `None` when absent, `Err(Unavailable)` when the
        /// request has no new object (DELETE).
        object_label, object_label);
    keyed!(
        /// Annotation `key` of the new object.
        object_annotation, object_annotation);
    keyed!(
        /// Label `key` of the stored object (`Err(Unavailable)` on CREATE).
        old_object_label, old_object_label);
    keyed!(
        /// Annotation `key` of the stored object.
        old_object_annotation, old_object_annotation);

    /// The `admission.k8s.io/v1` AdmissionRequest as JSON.
    pub fn json<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b [u8], Error> {
        buf::read(buf, |p, c| unsafe { sys::request_json(p, c) })
    }
    /// The new object as JSON; `Err(Unavailable)` when there is none.
    pub fn object_json<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b [u8], Error> {
        buf::read(buf, |p, c| unsafe { sys::object_json(p, c) })
    }
    /// The stored object as JSON; `Err(Unavailable)` when there is none.
    pub fn old_object_json<'b, B: Buffer + ?Sized>(&self, buf: &'b mut B) -> Result<&'b [u8], Error> {
        buf::read(buf, |p, c| unsafe { sys::old_object_json(p, c) })
    }
    /// One value of the new object by a [gjson path](https://github.com/tidwall/gjson/blob/master/SYNTAX.md)
    /// (`spec.hostNetwork`, `spec.containers.#.{name,resources}`), as JSON, evaluated by the
    /// host natively (docs/abi.md 4.6.1); `None` when the path is not there,
    /// `Err(Unavailable)` when the request has no new object.
    pub fn get<'b, B: Buffer + ?Sized>(&self, path: &str, buf: &'b mut B) -> Result<Option<&'b [u8]>, Error> {
        let (pp, pl) = buf::arg(path.as_bytes());
        buf::lookup(buf, |p, c| unsafe { sys::object_get(pp, pl, p, c) })
    }
    /// `get` on the stored object (`Err(Unavailable)` on CREATE).
    pub fn old_get<'b, B: Buffer + ?Sized>(&self, path: &str, buf: &'b mut B) -> Result<Option<&'b [u8]>, Error> {
        let (pp, pl) = buf::arg(path.as_bytes());
        buf::lookup(buf, |p, c| unsafe { sys::old_object_get(pp, pl, p, c) })
    }
    /// The pod accessors, which answer when the object is a Pod (on DELETE: the stored
    /// pod) and return `Err(Unavailable)` otherwise.
    pub fn pod(&self) -> Pod {
        Pod::new()
    }
    /// Adds a warning for the client (kubectl prints `Warning: <text>`); at most 16 per
    /// call, each cut to 1 KiB.
    pub fn warning(&self, text: &str) {
        let (p, l) = buf::arg(text.as_bytes());
        unsafe { sys::warning(p, l) }
    }
    /// Records `key=value` with the request in the API server's log (key at most 63 bytes).
    pub fn audit_annotation(&self, key: &str, value: &str) {
        let (kp, kl) = buf::arg(key.as_bytes());
        let (vp, vl) = buf::arg(value.as_bytes());
        unsafe { sys::audit_annotation(kp, kl, vp, vl) }
    }
    /// Mutate only: the RFC 6902 JSON Patch to apply to the new object (a JSON array of
    /// operations, at most 1 MiB). A later call replaces an earlier one.
    pub fn set_patch(&self, patch: &[u8]) {
        let (p, l) = buf::arg(patch);
        unsafe { sys::set_patch(p, l) }
    }
    /// Context-aware read: the object of resource `resource` (`namespaces`, `configmaps`)
    /// named `name` from the API server's watch cache (in the request's namespace for
    /// namespaced resources); `None` when it does not exist, `Err(Forbidden)` when the
    /// policy's `capabilities` do not list the resource. A module that calls this imports
    /// `get_object` and loads only with a capability grant.
    pub fn get_object<'b, B: Buffer + ?Sized>(&self, resource: &str, name: &str, buf: &'b mut B) -> Result<Option<&'b [u8]>, Error> {
        let (rp, rl) = buf::arg(resource.as_bytes());
        let (np, nl) = buf::arg(name.as_bytes());
        buf::lookup(buf, |p, c| unsafe { sys::get_object(rp, rl, np, nl, p, c) })
    }
    /// Context-aware read: `{"items":[...]}` with the objects of `resource` in the
    /// request's namespace (all of them for a cluster-scoped resource).
    pub fn list_objects<'b, B: Buffer + ?Sized>(&self, resource: &str, buf: &'b mut B) -> Result<&'b [u8], Error> {
        let (rp, rl) = buf::arg(resource.as_bytes());
        buf::read(buf, |p, c| unsafe { sys::list_objects(rp, rl, p, c) })
    }
}

#[doc(hidden)]
pub fn run_validate(f: impl FnOnce(&Request) -> Status) -> i32 {
    crate::__rt::finish(f(&Request { _p: () }))
}

#[doc(hidden)]
pub fn run_mutate(f: impl FnOnce(&Request) -> Status) -> i32 {
    crate::__rt::finish(f(&Request { _p: () }))
}
