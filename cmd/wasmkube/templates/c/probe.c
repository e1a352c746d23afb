/*
 * {{.Name}}: a wasmkube kubelet probe plugin in C without libc (docs/abi.md section 4.7):
 * the container is healthy when GET :8080/healthz on the pod's IP answers 2xx or 3xx.
 */
typedef int i32;
typedef long long i64;

/* Every host function is an import of module "wasmkube" (docs/abi.md section 4); every
 * entry point an export. sdk/c/wasmkube.h declares them all. */
#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

/* MSG passes a string literal as (ptr, len). */
#define MSG(s) s, (i32)(sizeof s - 1)

/* http_get: the HTTP status, or -errno (-111 ECONNREFUSED, -110 ETIMEDOUT, ...) */
IMPORT("http_get") i32 http_get(i32 port, const char *path, i32 path_len);
IMPORT("status_reason") void status_reason(const char *reason, i32 len);

enum { SUCCESS = 0, FAILURE = 2 };

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

EXPORT("wasmkube_probe") i32 probe(void) {
	i32 status = http_get(8080, MSG("/healthz"));
	if (status < 0) {
		/* the reason is the Unhealthy event's message */
		status_reason(MSG("GET :8080/healthz: no connection"));
		return FAILURE;
	}
	if (status < 200 || status >= 400) {
		status_reason(MSG("GET :8080/healthz: HTTP status not 2xx or 3xx"));
		return FAILURE;
	}
	return SUCCESS;
}
