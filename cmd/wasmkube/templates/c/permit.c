/*
 * {{.Name}}: a wasmkube scheduler Permit plugin in C without libc (docs/abi.md section 1.4):
 * a gang plugin. Pods labelled scheduling.wasmkube.io/group=NAME and
 * scheduling.wasmkube.io/min-available=N bind all together or not at all: each member
 * waits (60 s) until the N-th arrives, which allows every member waiting in its group.
 */
typedef int i32;
typedef long long i64;

#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))
#define MSG(s) s, (i32)(sizeof s - 1)

IMPORT("pod_label") i32 pod_label(const char *key, i32 key_len, char *buf, i32 cap);
IMPORT("status_reason") void status_reason(const char *reason, i32 len);
IMPORT("permit_wait") void permit_wait(i32 timeout_ms, const char *group, i32 group_len);
IMPORT("waiting_pods") i32 waiting_pods(const char *group, i32 group_len, char *buf, i32 cap);
IMPORT("waiting_allow") i32 waiting_allow(const char *uid, i32 uid_len);

enum { SUCCESS = 0, UNRESOLVABLE = 3, WAIT = 4 };

static char group[256], num[16], uids[65536];

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

/* min_available parses the size label: 1..9999, or 0 when absent or invalid. */
static i32 min_available(void) {
	i32 n = pod_label(MSG("scheduling.wasmkube.io/min-available"), num, sizeof num);
	if (n < 1 || n > 4)
		return 0;
	i32 v = 0;
	for (i32 i = 0; i < n; i++) {
		if (num[i] < '0' || num[i] > '9')
			return 0;
		v = v * 10 + (num[i] - '0');
	}
	return v;
}

EXPORT("wasmkube_permit") i32 permit(void) {
	i32 g = pod_label(MSG("scheduling.wasmkube.io/group"), group, sizeof group);
	if (g < 0)
		return SUCCESS; /* not in a group */
	if (g > (i32)sizeof group)
		g = sizeof group;
	i32 min = min_available();
	if (min == 0) {
		status_reason(MSG("label scheduling.wasmkube.io/min-available must be a number from 1 to 9999"));
		return UNRESOLVABLE;
	}
	i32 n = waiting_pods(group, g, uids, sizeof uids);
	if (n > (i32)sizeof uids)
		n = sizeof uids;
	i32 count = 0;
	for (i32 i = 0; i < n; i++)
		count += uids[i] == '\n';
	if (count + 1 < min) {
		permit_wait(60000, group, g);
		return WAIT;
	}
	for (i32 i = 0, start = 0; i < n; i++) {
		if (uids[i] == '\n') {
			waiting_allow(uids + start, i - start);
			start = i + 1;
		}
	}
	return SUCCESS;
}
