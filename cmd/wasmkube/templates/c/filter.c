/*
 * {{.Name}}: a wasmkube scheduler Filter plugin in C without libc (docs/abi.md). It
 * rejects every node labelled example.com/blocked (any value) as Unschedulable.
 */
typedef int i32;
typedef long long i64;

/* Every host function is an import of module "wasmkube" (docs/abi.md section 4); every
 * entry point an export. sdk/c/wasmkube.h declares them all. */
#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

/* MSG passes a string literal as (ptr, len). */
#define MSG(s) s, (i32)(sizeof s - 1)

IMPORT("node_label") i32 node_label(i32 i, const char *key, i32 key_len, char *buf, i32 cap);
IMPORT("node_status") void node_status(i32 i, i32 code, const char *reason, i32 len);

enum { SUCCESS = 0, UNSCHEDULABLE = 2 };

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

/* sign: the signature (docs/abi.md section 1.5). filter reads nothing of the pod, so every
 * pod signs alike (no fragments, Success) and the scheduler may place a pod from the pass
 * of the pod before it (batching). Sign everything filter reads when you change it
 * (sign_fragment); `wasmkube plugin conformance` fails a plugin that signs too little. */
EXPORT("wasmkube_sign") i32 sign(void) { return SUCCESS; }

/* filter(count): nodes 0..count-1 of the batch; the ones not rejected pass. */
EXPORT("wasmkube_filter") i32 filter(i32 count) {
	for (i32 i = 0; i < count; i++) {
		/* cap 0: only ask whether the label exists (its length, or -1) */
		if (node_label(i, MSG("example.com/blocked"), 0, 0) >= 0)
			node_status(i, UNSCHEDULABLE, MSG("node is blocked (label example.com/blocked)"));
	}
	return SUCCESS;
}
