/*
 * wasmkube.h: the wasmkube plugin ABI v1 (docs/abi.md) for C, as one header.
 *
 * Declares every host function of the module "wasmkube" with its exact wasm signature,
 * the status codes and the entry-point export macro. It needs no libc: build with
 *   clang --target=wasm32 -nostdlib -O2 -Wl,--no-entry -I sdk/c plugin.c -o plugin.wasm
 * or, with wasi-libc, --target=wasm32-wasi -mexec-model=reactor.
 *
 * A plugin defines wasmkube_abi_version with WASMKUBE_ABI_VERSION_EXPORT and the entry
 * points it implements with WASMKUBE_EXPORT, e.g.
 *   WASMKUBE_EXPORT(wasmkube_filter) int32_t filter(int32_t count) { ... }
 */
#ifndef WASMKUBE_H
#define WASMKUBE_H

typedef int int32_t;
typedef long long int64_t;

#define WASMKUBE_IMPORT(name) __attribute__((import_module("wasmkube"), import_name(#name)))
#define WASMKUBE_EXPORT(name) __attribute__((export_name(#name)))

/* Declares the required version marker (section 1.1). Use once per module. */
#define WASMKUBE_ABI_VERSION_EXPORT \
	WASMKUBE_EXPORT(wasmkube_abi_version) int32_t wasmkube_abi_version_(void) { return 1; }

/* Status codes (section 1.3). */
enum {
	WASMKUBE_SUCCESS = 0,
	WASMKUBE_ERROR = 1,
	WASMKUBE_UNSCHEDULABLE = 2,
	WASMKUBE_UNSCHEDULABLE_AND_UNRESOLVABLE = 3,
	WASMKUBE_SKIP = 5,
};

/* Admission results (section 4.6): Validate and Mutate return SUCCESS, ERROR or DENIED. */
enum { WASMKUBE_DENIED = 2 };

/* Answers of the read functions besides a length (section 2). */
enum { WASMKUBE_NOT_FOUND = -1, WASMKUBE_UNAVAILABLE = -2, WASMKUBE_FORBIDDEN = -3 };

/* Log levels (section 4.5). */
enum { WASMKUBE_DEBUG = 0, WASMKUBE_INFO = 1, WASMKUBE_WARN = 2, WASMKUBE_LOG_ERROR = 3 };

/* Indices of the pod_requests record (5 x int64, section 4.1). */
enum { WASMKUBE_POD_CPU, WASMKUBE_POD_MEMORY, WASMKUBE_POD_EPHEMERAL, WASMKUBE_POD_NONZERO_CPU,
	WASMKUBE_POD_NONZERO_MEMORY, WASMKUBE_POD_REQUESTS_LEN };

/* Indices of the node_resources record (10 x int64, section 4.3). */
enum { WASMKUBE_ALLOC_CPU, WASMKUBE_ALLOC_MEMORY, WASMKUBE_ALLOC_EPHEMERAL, WASMKUBE_ALLOC_PODS,
	WASMKUBE_REQ_CPU, WASMKUBE_REQ_MEMORY, WASMKUBE_REQ_EPHEMERAL, WASMKUBE_REQ_PODS,
	WASMKUBE_NONZERO_REQ_CPU, WASMKUBE_NONZERO_REQ_MEMORY, WASMKUBE_NODE_RESOURCES_LEN };

/* 4.1 The pod. Read functions return the value's full length; nothing is written when it
 * exceeds cap (call again with a bigger buffer). */
WASMKUBE_IMPORT(pod_json) int32_t wasmkube_pod_json(char *buf, int32_t cap);
WASMKUBE_IMPORT(pod_name) int32_t wasmkube_pod_name(char *buf, int32_t cap);
WASMKUBE_IMPORT(pod_namespace) int32_t wasmkube_pod_namespace(char *buf, int32_t cap);
WASMKUBE_IMPORT(pod_label) int32_t wasmkube_pod_label(const char *key, int32_t key_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(pod_annotation) int32_t wasmkube_pod_annotation(const char *key, int32_t key_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(pod_requests) int32_t wasmkube_pod_requests(int64_t out[WASMKUBE_POD_REQUESTS_LEN]);
WASMKUBE_IMPORT(pod_scalar_names) int32_t wasmkube_pod_scalar_names(char *buf, int32_t cap);
WASMKUBE_IMPORT(pod_scalar_request) int64_t wasmkube_pod_scalar_request(const char *name, int32_t name_len);

/* 4.2 Plugin args and cycle state. */
WASMKUBE_IMPORT(args) int32_t wasmkube_args(char *buf, int32_t cap);
WASMKUBE_IMPORT(state_get) int32_t wasmkube_state_get(const char *key, int32_t key_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(state_set) int32_t wasmkube_state_set(const char *key, int32_t key_len, const char *val, int32_t val_len);

/* 4.3 Nodes of the batch, index 0 .. count-1. */
WASMKUBE_IMPORT(node_json) int32_t wasmkube_node_json(int32_t i, char *buf, int32_t cap);
WASMKUBE_IMPORT(node_name) int32_t wasmkube_node_name(int32_t i, char *buf, int32_t cap);
WASMKUBE_IMPORT(node_label) int32_t wasmkube_node_label(int32_t i, const char *key, int32_t key_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(node_taints) int32_t wasmkube_node_taints(int32_t i, char *buf, int32_t cap);
WASMKUBE_IMPORT(node_resources) int32_t wasmkube_node_resources(int32_t i, int64_t out[WASMKUBE_NODE_RESOURCES_LEN]);
WASMKUBE_IMPORT(node_scalar) int64_t wasmkube_node_scalar(int32_t i, int32_t which, const char *name, int32_t name_len);
WASMKUBE_IMPORT(node_filter_code) int32_t wasmkube_node_filter_code(int32_t i);
WASMKUBE_IMPORT(score_get) int64_t wasmkube_score_get(int32_t i);
/* The run form of node_resources: the records of nodes first .. (up to count) one after
 * another in out (count * WASMKUBE_NODE_RESOURCES_LEN int64s); returns how many, or
 * WASMKUBE_UNAVAILABLE. One call for many nodes instead of one call each. */
WASMKUBE_IMPORT(node_resources_range) int32_t wasmkube_node_resources_range(int32_t first, int32_t count, int64_t *out);

/* 4.4 Results. */
WASMKUBE_IMPORT(status_reason) void wasmkube_status_reason(const char *p, int32_t l);
WASMKUBE_IMPORT(node_status) void wasmkube_node_status(int32_t i, int32_t code, const char *p, int32_t l);
WASMKUBE_IMPORT(node_score) void wasmkube_node_score(int32_t i, int64_t score);
/* The run form of node_score: scores[0 .. count) for nodes first .. first+count-1. */
WASMKUBE_IMPORT(node_scores) void wasmkube_node_scores(int32_t first, int32_t count, const int64_t *scores);
WASMKUBE_IMPORT(prefilter_node) void wasmkube_prefilter_node(const char *p, int32_t l);
WASMKUBE_IMPORT(nominate) void wasmkube_nominate(const char *p, int32_t l);

/* 4.5 Logging. */
WASMKUBE_IMPORT(log) void wasmkube_log(int32_t level, const char *p, int32_t l);

/* 4.6 Admission (wasmkube_validate, wasmkube_mutate: () -> int32_t). The pod functions of 4.1
 * answer when the object is a Pod; object functions answer WASMKUBE_UNAVAILABLE when the
 * request has no such object (no new object on DELETE/CONNECT, no stored one on CREATE).
 * Lists (request_groups, pod_images) hold one item per line, each followed by '\n'. */
WASMKUBE_IMPORT(request_json) int32_t wasmkube_request_json(char *buf, int32_t cap);
WASMKUBE_IMPORT(request_operation) int32_t wasmkube_request_operation(char *buf, int32_t cap);
WASMKUBE_IMPORT(request_kind) int32_t wasmkube_request_kind(char *buf, int32_t cap);
WASMKUBE_IMPORT(request_resource) int32_t wasmkube_request_resource(char *buf, int32_t cap);
WASMKUBE_IMPORT(request_name) int32_t wasmkube_request_name(char *buf, int32_t cap);
WASMKUBE_IMPORT(request_namespace) int32_t wasmkube_request_namespace(char *buf, int32_t cap);
WASMKUBE_IMPORT(request_user) int32_t wasmkube_request_user(char *buf, int32_t cap);
WASMKUBE_IMPORT(request_groups) int32_t wasmkube_request_groups(char *buf, int32_t cap);
WASMKUBE_IMPORT(object_json) int32_t wasmkube_object_json(char *buf, int32_t cap);
WASMKUBE_IMPORT(old_object_json) int32_t wasmkube_old_object_json(char *buf, int32_t cap);
WASMKUBE_IMPORT(object_get) int32_t wasmkube_object_get(const char *path, int32_t path_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(old_object_get) int32_t wasmkube_old_object_get(const char *path, int32_t path_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(object_label) int32_t wasmkube_object_label(const char *key, int32_t key_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(object_annotation) int32_t wasmkube_object_annotation(const char *key, int32_t key_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(old_object_label) int32_t wasmkube_old_object_label(const char *key, int32_t key_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(old_object_annotation) int32_t wasmkube_old_object_annotation(const char *key, int32_t key_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(pod_images) int32_t wasmkube_pod_images(char *buf, int32_t cap);
WASMKUBE_IMPORT(warning) void wasmkube_warning(const char *p, int32_t l);
WASMKUBE_IMPORT(audit_annotation) void wasmkube_audit_annotation(const char *key, int32_t key_len, const char *val, int32_t val_len);
WASMKUBE_IMPORT(set_patch) void wasmkube_set_patch(const char *p, int32_t l);
/* Context-aware reads: a module importing these loads only with a `capabilities` grant;
 * a resource the grant does not list answers WASMKUBE_FORBIDDEN. */
WASMKUBE_IMPORT(get_object) int32_t wasmkube_get_object(const char *res, int32_t res_len, const char *name, int32_t name_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(list_objects) int32_t wasmkube_list_objects(const char *res, int32_t res_len, char *buf, int32_t cap);

/* 4.7 Kubelet hooks (wasmkube_probe, wasmkube_prestop: () -> int32_t). A Probe returns
 * WASMKUBE_SUCCESS, WASMKUBE_FAILURE (the reason is the Unhealthy event's message) or
 * WASMKUBE_ERROR; a PreStop WASMKUBE_SUCCESS or WASMKUBE_ERROR. The network functions reach
 * only the pod's IP, wait at most until the call's time limit, and return an HTTP status
 * (http_*), 0 (tcp_connect, sleep_ms) or a negated errno below. */
enum { WASMKUBE_FAILURE = 2 };
enum { WASMKUBE_EIO = 5, WASMKUBE_EACCES = 13, WASMKUBE_EINVAL = 22, WASMKUBE_ECONNRESET = 104,
	WASMKUBE_ETIMEDOUT = 110, WASMKUBE_ECONNREFUSED = 111, WASMKUBE_EHOSTUNREACH = 113 };
WASMKUBE_IMPORT(container_name) int32_t wasmkube_container_name(char *buf, int32_t cap);
WASMKUBE_IMPORT(probe_kind) int32_t wasmkube_probe_kind(char *buf, int32_t cap);
WASMKUBE_IMPORT(pod_ip) int32_t wasmkube_pod_ip(char *buf, int32_t cap);
WASMKUBE_IMPORT(tcp_connect) int32_t wasmkube_tcp_connect(int32_t port);
WASMKUBE_IMPORT(http_get) int32_t wasmkube_http_get(int32_t port, const char *path, int32_t path_len);
/* PreStop only (WASMKUBE_UNAVAILABLE in a Probe); the body is at most 64 KiB. */
WASMKUBE_IMPORT(http_post) int32_t wasmkube_http_post(int32_t port, const char *path, int32_t path_len, const char *body, int32_t body_len);
/* The call's last response: its body (cut to 64 KiB) and the first value of a header. */
WASMKUBE_IMPORT(response_body) int32_t wasmkube_response_body(char *buf, int32_t cap);
WASMKUBE_IMPORT(response_header) int32_t wasmkube_response_header(const char *name, int32_t name_len, char *buf, int32_t cap);
/* PreStop only: returns 0, or -WASMKUBE_ETIMEDOUT when the call's time limit cut it short. */
WASMKUBE_IMPORT(sleep_ms) int32_t wasmkube_sleep_ms(int32_t ms);

/* 4.8 Binding cycle and queueing (docs/abi.md section 1.4): wasmkube_reserve,
 * wasmkube_unreserve, wasmkube_permit, wasmkube_prebind, wasmkube_postbind, wasmkube_events
 * and wasmkube_queueing_hint, all () -> int32_t. The chosen node is node 0 of the node
 * functions (not node_resources). A Permit returns WASMKUBE_WAIT after permit_wait; a hint
 * WASMKUBE_SUCCESS (Queue) or WASMKUBE_SKIP. */
enum { WASMKUBE_WAIT = 4 };
enum { WASMKUBE_EVENT_ADD = 1, WASMKUBE_EVENT_DELETE = 2, WASMKUBE_EVENT_UPDATE = 4 };
WASMKUBE_IMPORT(pod_uid) int32_t wasmkube_pod_uid(char *buf, int32_t cap);
WASMKUBE_IMPORT(shared_add) int64_t wasmkube_shared_add(const char *key, int32_t key_len, int64_t delta);
WASMKUBE_IMPORT(shared_get) int64_t wasmkube_shared_get(const char *key, int32_t key_len);
WASMKUBE_IMPORT(permit_wait) void wasmkube_permit_wait(int32_t timeout_ms, const char *group, int32_t group_len);
WASMKUBE_IMPORT(waiting_pods) int32_t wasmkube_waiting_pods(const char *group, int32_t group_len, char *buf, int32_t cap);
WASMKUBE_IMPORT(waiting_allow) int32_t wasmkube_waiting_allow(const char *uid, int32_t uid_len);
WASMKUBE_IMPORT(waiting_reject) int32_t wasmkube_waiting_reject(const char *uid, int32_t uid_len, const char *reason, int32_t reason_len);
WASMKUBE_IMPORT(register_event) void wasmkube_register_event(const char *res, int32_t res_len, int32_t actions);
WASMKUBE_IMPORT(event_resource) int32_t wasmkube_event_resource(char *buf, int32_t cap);
WASMKUBE_IMPORT(event_action) int32_t wasmkube_event_action(void);
WASMKUBE_IMPORT(event_object_json) int32_t wasmkube_event_object_json(char *buf, int32_t cap);
WASMKUBE_IMPORT(event_old_object_json) int32_t wasmkube_event_old_object_json(char *buf, int32_t cap);

/* Signatures (docs/abi.md 1.5): a module that exports wasmkube_sign, () -> int32_t, calls
 * sign_fragment once for each part of the pod its Filter and Score verdicts read, then
 * returns WASMKUBE_SUCCESS, or WASMKUBE_UNSIGNABLE for a pod it cannot sign. */
enum { WASMKUBE_UNSIGNABLE = 2 };
WASMKUBE_IMPORT(sign_fragment) void wasmkube_sign_fragment(const char *key, int32_t key_len, const char *value, int32_t value_len);

/* WASMKUBE_STR expands a string literal to its (pointer, length) pair. */
#define WASMKUBE_STR(s) (s), (int32_t)(sizeof(s) - 1)

#endif
