/*
 * {{.Name}}: a wasmkube validating admission policy in C without libc (docs/abi.md
 * section 4.6): objects created or updated must carry the label app. Which resources it
 * sees is the admission: config's rules.
 */
typedef int i32;
typedef long long i64;

/* Every host function is an import of module "wasmkube" (docs/abi.md section 4); every
 * entry point an export. sdk/c/wasmkube.h declares them all. */
#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

/* MSG passes a string literal as (ptr, len). */
#define MSG(s) s, (i32)(sizeof s - 1)

/* object_label: the value's length, -1 absent, -2 no object (DELETE, CONNECT) */
IMPORT("object_label") i32 object_label(const char *key, i32 key_len, char *buf, i32 cap);
IMPORT("status_reason") void status_reason(const char *reason, i32 len);

enum { ALLOWED = 0, DENIED = 2 };

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

EXPORT("wasmkube_validate") i32 validate(void) {
	if (object_label(MSG("app"), 0, 0) == -1) {
		/* a reason starting with a field path and a colon becomes a 422 naming that field */
		status_reason(MSG("metadata.labels: the label app is required"));
		return DENIED;
	}
	return ALLOWED;
}
