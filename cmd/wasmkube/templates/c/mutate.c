/*
 * {{.Name}}: a wasmkube mutating admission policy in C without libc (docs/abi.md section
 * 4.6): pods created get spec.enableServiceLinks: false (no environment variables for
 * every Service of the namespace). Which resources it sees is the admission: config's rules.
 */
typedef int i32;
typedef long long i64;

/* Every host function is an import of module "wasmkube" (docs/abi.md section 4); every
 * entry point an export. sdk/c/wasmkube.h declares them all. */
#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

/* MSG passes a string literal as (ptr, len). */
#define MSG(s) s, (i32)(sizeof s - 1)

IMPORT("request_operation") i32 request_operation(char *buf, i32 cap);
IMPORT("request_kind") i32 request_kind(char *buf, i32 cap);
/* set_patch: an RFC 6902 JSON Patch the host applies to the new object */
IMPORT("set_patch") void set_patch(const char *patch, i32 len);

enum { ALLOWED = 0 };

/* is reports whether the n bytes read into buf are the string s. */
static i32 is(const char *buf, i32 n, const char *s) {
	i32 i = 0;
	for (; i < n && s[i]; i++)
		if (buf[i] != s[i])
			return 0;
	return i == n && !s[i];
}

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

EXPORT("wasmkube_mutate") i32 mutate(void) {
	char buf[16];
	/* a value longer than the buffer returns its length and writes nothing */
	i32 n = request_operation(buf, sizeof buf);
	if (n < 0 || n > (i32)sizeof buf || !is(buf, n, "CREATE"))
		return ALLOWED;
	n = request_kind(buf, sizeof buf);
	if (n < 0 || n > (i32)sizeof buf || !is(buf, n, "Pod"))
		return ALLOWED;
	/* "add" on a member that exists replaces it */
	set_patch(MSG("[{\"op\":\"add\",\"path\":\"/spec/enableServiceLinks\",\"value\":false}]"));
	return ALLOWED;
}
