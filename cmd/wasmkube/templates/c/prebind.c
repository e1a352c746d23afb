/*
 * {{.Name}}: a wasmkube scheduler PreBind plugin in C without libc (docs/abi.md section
 * 1.4): "bind only once the license is granted". A pod annotated example.com/license binds
 * only when it also carries example.com/license-granted=true; until then PreBind answers 2
 * (not now) and the pod goes back to the queue as unschedulable.
 */
typedef int i32;

#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))
#define MSG(s) s, (i32)(sizeof s - 1)

IMPORT("pod_annotation") i32 pod_annotation(const char *key, i32 key_len, char *buf, i32 cap);
IMPORT("status_reason") void status_reason(const char *reason, i32 len);

enum { SUCCESS = 0, UNSCHEDULABLE = 2 };

static char val[16];

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

EXPORT("wasmkube_prebind") i32 prebind(void) {
	if (pod_annotation(MSG("example.com/license"), 0, 0) < 0)
		return SUCCESS; /* asks for no license */
	if (pod_annotation(MSG("example.com/license-granted"), val, sizeof val) == 4 &&
	    val[0] == 't' && val[1] == 'r' && val[2] == 'u' && val[3] == 'e')
		return SUCCESS;
	status_reason(MSG("waiting for example.com/license-granted=true"));
	return UNSCHEDULABLE;
}
