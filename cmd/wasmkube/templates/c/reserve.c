/*
 * {{.Name}}: a wasmkube scheduler Reserve/Unreserve plugin in C without libc (docs/abi.md
 * section 1.4). A node labelled wasmkube.io/max-binding=N takes at most N pods between
 * Reserve and the end of their binding cycle. It counts with the shared counters (one per
 * node) and keeps a marker in cycle state, so that Unreserve (and PostBind) undo exactly
 * what its Reserve did, and nothing when Reserve refused or never ran. Its queueing hint
 * skips a Node Update (no node change lowers a count of pods in flight).
 */
typedef int i32;
typedef long long i64;

#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))
#define MSG(s) s, (i32)(sizeof s - 1)

IMPORT("node_name") i32 node_name(i32 i, char *buf, i32 cap);
IMPORT("node_label") i32 node_label(i32 i, const char *key, i32 key_len, char *buf, i32 cap);
IMPORT("state_get") i32 state_get(const char *key, i32 key_len, char *buf, i32 cap);
IMPORT("state_set") i32 state_set(const char *key, i32 key_len, const char *val, i32 val_len);
IMPORT("shared_add") i64 shared_add(const char *key, i32 key_len, i64 delta);
IMPORT("status_reason") void status_reason(const char *reason, i32 len);
IMPORT("register_event") void register_event(const char *res, i32 res_len, i32 actions);
IMPORT("event_resource") i32 event_resource(char *buf, i32 cap);
IMPORT("event_action") i32 event_action(void);

enum { SUCCESS = 0, UNSCHEDULABLE = 2, SKIP = 5 };
enum { ADD = 1, DELETE = 2, UPDATE = 4 };

static char name[256], num[16], mark[16], res[16];

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

/* cap parses the node's max-binding label: 1..9999, or 0 (no cap). */
static i32 cap(void) {
	i32 n = node_label(0, MSG("wasmkube.io/max-binding"), num, sizeof num);
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

static i32 chosen(void) {
	i32 n = node_name(0, name, sizeof name);
	return n > (i32)sizeof name ? (i32)sizeof name : n;
}

EXPORT("wasmkube_reserve") i32 reserve(void) {
	i32 c = cap();
	if (c == 0)
		return SUCCESS;
	i32 n = chosen();
	/* the marker first: a Reserve stopped after it is undone by its Unreserve */
	state_set(MSG("counted"), MSG("1"));
	if (shared_add(name, n, 1) > c) {
		shared_add(name, n, -1);
		state_set(MSG("counted"), MSG("0"));
		status_reason(MSG("too many pods binding on this node"));
		return UNSCHEDULABLE;
	}
	return SUCCESS;
}

/* release takes the pod's 1 back if its Reserve counted it, once. */
static i32 release(void) {
	if (state_get(MSG("counted"), mark, sizeof mark) != 1 || mark[0] != '1')
		return SUCCESS;
	shared_add(name, chosen(), -1);
	state_set(MSG("counted"), MSG("0"));
	return SUCCESS;
}

EXPORT("wasmkube_unreserve") i32 unreserve(void) { return release(); }
EXPORT("wasmkube_postbind") i32 postbind(void) { return release(); }

EXPORT("wasmkube_events") i32 events(void) {
	register_event(MSG("Pod"), DELETE);
	register_event(MSG("Node"), ADD | UPDATE);
	return SUCCESS;
}

EXPORT("wasmkube_queueing_hint") i32 queueing_hint(void) {
	if (event_resource(res, sizeof res) == 4 && event_action() == UPDATE)
		return SKIP; /* Node Update */
	return SUCCESS; /* Queue */
}
