//! The raw host functions of ABI v1 (docs/abi.md section 4), exactly as the host defines
//! them. Every other module of the crate is a safe wrapper over these; use them directly
//! only for what the wrappers do not cover.
//!
//! Declaring a function here does not import it: the linker keeps only the imports a
//! plugin calls, so a filter plugin imports neither admission nor kubelet functions (a host
//! rejects imports it does not define, and `get_object`/`list_objects` need a capability).
#![allow(missing_docs)]

#[link(wasm_import_module = "wasmkube")]
extern "C" {
    // 4.1 Pod
    pub fn pod_json(buf: *mut u8, cap: i32) -> i32;
    pub fn pod_name(buf: *mut u8, cap: i32) -> i32;
    pub fn pod_namespace(buf: *mut u8, cap: i32) -> i32;
    pub fn pod_label(key: *const u8, key_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn pod_annotation(key: *const u8, key_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn pod_requests(out: *mut i64) -> i32;
    pub fn pod_scalar_names(buf: *mut u8, cap: i32) -> i32;
    pub fn pod_scalar_request(name: *const u8, name_len: i32) -> i64;

    // 4.2 Args and cycle state
    pub fn args(buf: *mut u8, cap: i32) -> i32;
    pub fn state_get(key: *const u8, key_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn state_set(key: *const u8, key_len: i32, val: *const u8, val_len: i32) -> i32;

    // 4.3 Nodes of the batch
    pub fn node_json(i: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn node_name(i: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn node_label(i: i32, key: *const u8, key_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn node_taints(i: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn node_resources(i: i32, out: *mut i64) -> i32;
    pub fn node_scalar(i: i32, which: i32, name: *const u8, name_len: i32) -> i64;
    pub fn node_filter_code(i: i32) -> i32;
    pub fn score_get(i: i32) -> i64;
    /// The run form of `node_resources`: the records of nodes `first ..` (up to `count`)
    /// one after another; returns how many.
    pub fn node_resources_range(first: i32, count: i32, out: *mut i64) -> i32;

    // 4.4 Results
    pub fn status_reason(p: *const u8, l: i32);
    pub fn node_status(i: i32, code: i32, p: *const u8, l: i32);
    pub fn node_score(i: i32, score: i64);
    /// The run form of `node_score`: `count` scores for nodes `first ..`.
    pub fn node_scores(first: i32, count: i32, scores: *const i64);
    pub fn prefilter_node(p: *const u8, l: i32);
    pub fn nominate(p: *const u8, l: i32);

    // 4.5 Logging
    pub fn log(level: i32, p: *const u8, l: i32);

    // 4.8 Binding cycle and queueing
    pub fn pod_uid(buf: *mut u8, cap: i32) -> i32;
    pub fn shared_add(key: *const u8, key_len: i32, delta: i64) -> i64;
    pub fn shared_get(key: *const u8, key_len: i32) -> i64;
    pub fn permit_wait(timeout_ms: i32, group: *const u8, group_len: i32);
    pub fn waiting_pods(group: *const u8, group_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn waiting_allow(uid: *const u8, uid_len: i32) -> i32;
    pub fn waiting_reject(uid: *const u8, uid_len: i32, reason: *const u8, reason_len: i32) -> i32;
    pub fn register_event(res: *const u8, res_len: i32, actions: i32);
    pub fn event_resource(buf: *mut u8, cap: i32) -> i32;
    pub fn event_action() -> i32;
    pub fn event_object_json(buf: *mut u8, cap: i32) -> i32;
    pub fn event_old_object_json(buf: *mut u8, cap: i32) -> i32;

    // 1.5 Signatures
    pub fn sign_fragment(key: *const u8, key_len: i32, value: *const u8, value_len: i32);

    // 4.6 Admission
    pub fn request_json(buf: *mut u8, cap: i32) -> i32;
    pub fn request_operation(buf: *mut u8, cap: i32) -> i32;
    pub fn request_kind(buf: *mut u8, cap: i32) -> i32;
    pub fn request_resource(buf: *mut u8, cap: i32) -> i32;
    pub fn request_name(buf: *mut u8, cap: i32) -> i32;
    pub fn request_namespace(buf: *mut u8, cap: i32) -> i32;
    pub fn request_user(buf: *mut u8, cap: i32) -> i32;
    pub fn request_groups(buf: *mut u8, cap: i32) -> i32;
    pub fn object_json(buf: *mut u8, cap: i32) -> i32;
    pub fn old_object_json(buf: *mut u8, cap: i32) -> i32;
    pub fn object_get(path: *const u8, path_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn old_object_get(path: *const u8, path_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn object_label(key: *const u8, key_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn object_annotation(key: *const u8, key_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn old_object_label(key: *const u8, key_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn old_object_annotation(key: *const u8, key_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn pod_images(buf: *mut u8, cap: i32) -> i32;
    pub fn warning(p: *const u8, l: i32);
    pub fn audit_annotation(key: *const u8, key_len: i32, val: *const u8, val_len: i32);
    pub fn set_patch(p: *const u8, l: i32);
    pub fn get_object(res: *const u8, res_len: i32, name: *const u8, name_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn list_objects(res: *const u8, res_len: i32, buf: *mut u8, cap: i32) -> i32;

    // 4.7 Kubelet hooks
    pub fn container_name(buf: *mut u8, cap: i32) -> i32;
    pub fn probe_kind(buf: *mut u8, cap: i32) -> i32;
    pub fn pod_ip(buf: *mut u8, cap: i32) -> i32;
    pub fn tcp_connect(port: i32) -> i32;
    pub fn http_get(port: i32, path: *const u8, path_len: i32) -> i32;
    pub fn http_post(port: i32, path: *const u8, path_len: i32, body: *const u8, body_len: i32) -> i32;
    pub fn response_body(buf: *mut u8, cap: i32) -> i32;
    pub fn response_header(name: *const u8, name_len: i32, buf: *mut u8, cap: i32) -> i32;
    pub fn sleep_ms(ms: i32) -> i32;
}
