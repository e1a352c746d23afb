/*
 * {{.Name}}: a wasmkube scheduler Score plugin in C without libc (docs/abi.md). A node
 * scores the share of its allocatable cpu left free after placing the pod, 0 to 100 (the
 * non-zero requests, as upstream's LeastAllocated counts them).
 */
typedef int i32;
typedef long long i64;

/* Every host function is an import of module "wasmkube" (docs/abi.md section 4); every
 * entry point an export. sdk/c/wasmkube.h declares them all. */
#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

/* MSG passes a string literal as (ptr, len). */
#define MSG(s) s, (i32)(sizeof s - 1)

/* pod_requests: cpu, memory, ephemeral, non-zero cpu, non-zero memory */
IMPORT("pod_requests") i32 pod_requests(i64 out[5]);
/* node_resources: [0..3] allocatable, [4..7] requested, [8..9] non-zero requested cpu, memory */
IMPORT("node_resources") i32 node_resources(i32 i, i64 out[10]);
IMPORT("node_score") void node_score(i32 i, i64 score);
IMPORT("status_reason") void status_reason(const char *reason, i32 len);
IMPORT("sign_fragment") void sign_fragment(const char *key, i32 key_len, const char *value, i32 value_len);

enum { SUCCESS = 0, ERROR = 1, UNSIGNABLE = 2 };

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

/* sign: the signature (docs/abi.md section 1.5). score reads the pod's non-zero cpu
 * request and nothing else of it, so pods that ask for the same cpu may be placed from one
 * pass (batching). Sign everything score reads when you change it; `wasmkube plugin
 * conformance` fails a plugin that signs too little. */
EXPORT("wasmkube_sign") i32 sign(void) {
	i64 pod[5];
	char digits[24];
	if (pod_requests(pod) != 40 || pod[3] < 0)
		return UNSIGNABLE; /* scheduled by a pass of its own */
	/* the value in decimal, written from the end */
	i32 at = sizeof digits;
	i64 v = pod[3];
	do {
		digits[--at] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	sign_fragment(MSG("nonzero-cpu"), digits + at, (i32)sizeof digits - at);
	return SUCCESS;
}

/* score(count): a score for each node 0..count-1 of the batch, from that node alone
 * (never rescaled within the batch: that is NormalizeScore's job). */
EXPORT("wasmkube_score") i32 score(i32 count) {
	i64 pod[5], node[10];
	if (pod_requests(pod) != 40) {
		status_reason(MSG("pod_requests: unavailable"));
		return ERROR;
	}
	for (i32 i = 0; i < count; i++) {
		i64 s = 0;
		if (node_resources(i, node) == 80) {
			i64 alloc = node[0], used = node[8] + pod[3];
			if (alloc > 0 && used < alloc)
				s = (alloc - used) * 100 / alloc;
		}
		node_score(i, s);
	}
	return SUCCESS;
}
