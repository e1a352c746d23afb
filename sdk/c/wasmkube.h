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

/* Answers of the read functions besides a length (section 2). */
enum { WASMKUBE_NOT_FOUND = -1, WASMKUBE_UNAVAILABLE = -2 };

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

/* 4.4 Results. */
WASMKUBE_IMPORT(status_reason) void wasmkube_status_reason(const char *p, int32_t l);
WASMKUBE_IMPORT(node_status) void wasmkube_node_status(int32_t i, int32_t code, const char *p, int32_t l);
WASMKUBE_IMPORT(node_score) void wasmkube_node_score(int32_t i, int64_t score);
WASMKUBE_IMPORT(prefilter_node) void wasmkube_prefilter_node(const char *p, int32_t l);
WASMKUBE_IMPORT(nominate) void wasmkube_nominate(const char *p, int32_t l);

/* 4.5 Logging. */
WASMKUBE_IMPORT(log) void wasmkube_log(int32_t level, const char *p, int32_t l);

/* WASMKUBE_STR expands a string literal to its (pointer, length) pair. */
#define WASMKUBE_STR(s) (s), (int32_t)(sizeof(s) - 1)

#endif
