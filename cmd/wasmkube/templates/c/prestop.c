/*
 * {{.Name}}: a wasmkube kubelet preStop plugin in C without libc (docs/abi.md section
 * 4.7): before the container is stopped it asks the application to shut down with
 * POST :8080/shutdown. SIGTERM follows either way.
 */
typedef int i32;
typedef long long i64;

/* Every host function is an import of module "wasmkube" (docs/abi.md section 4); every
 * entry point an export. sdk/c/wasmkube.h declares them all. */
#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

/* MSG passes a string literal as (ptr, len). */
#define MSG(s) s, (i32)(sizeof s - 1)

/* http_post: the HTTP status, or -errno (-111 ECONNREFUSED, -110 ETIMEDOUT, ...) */
IMPORT("http_post") i32 http_post(i32 port, const char *path, i32 path_len, const char *body, i32 body_len);
IMPORT("status_reason") void status_reason(const char *reason, i32 len);

enum { DONE = 0, ERROR = 1 };

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

EXPORT("wasmkube_prestop") i32 prestop(void) {
	i32 status = http_post(8080, MSG("/shutdown"), 0, 0);
	if (status < 0) {
		/* an Error becomes a FailedPreStopHook event */
		status_reason(MSG("POST :8080/shutdown: no connection"));
		return ERROR;
	}
	if (status < 200 || status >= 300) {
		status_reason(MSG("POST :8080/shutdown: HTTP status not 2xx"));
		return ERROR;
	}
	return DONE;
}
