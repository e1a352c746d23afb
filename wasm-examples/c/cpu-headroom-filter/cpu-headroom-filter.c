/*
 * cpu-headroom-filter: a wasmkube scheduler Filter written in plain C against
 * docs/abi.md (ABI v1), with no libc and no allocator.
 *
 * A node passes when, after placing the pod, at least `headroom` percent of its
 * allocatable cpu stays free. The percentage comes from the plugin args
 * ({"headroom": 20}); a pod may ask for more with the annotation
 * wasmkube.io/cpu-headroom: "<percent>".
 */
typedef int i32;
typedef long long i64;

#define IMPORT(name) __attribute__((import_module("wasmkube"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

IMPORT("args") i32 host_args(char *buf, i32 cap);
IMPORT("pod_requests") i32 pod_requests(i64 *out);
IMPORT("pod_annotation") i32 pod_annotation(const char *key, i32 key_len, char *buf, i32 cap);
IMPORT("node_resources") i32 node_resources(i32 i, i64 *out);
IMPORT("node_status") void node_status(i32 i, i32 code, const char *reason, i32 len);
IMPORT("status_reason") void status_reason(const char *reason, i32 len);
IMPORT("log") void host_log(i32 level, const char *msg, i32 len);

enum { SUCCESS = 0, ERROR = 1, UNSCHEDULABLE = 2 };

static i32 headroom = 10; /* percent; the same in every instance: set in wasmkube_init */

static i32 len(const char *s) {
	i32 n = 0;
	while (s[n])
		n++;
	return n;
}

/* parse_percent reads a decimal 0..100 from s[0..n); returns -1 if it is not one. */
static i32 parse_percent(const char *s, i32 n) {
	i32 v = 0, digits = 0;
	for (i32 i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
		digits++;
		if (v > 100)
			return -1;
	}
	return digits ? v : -1;
}

/* json_int finds "key": <digits> in a flat JSON object; -2 when absent, -1 when not 0..100. */
static i32 json_int(const char *json, i32 n, const char *key) {
	i32 kl = len(key);
	for (i32 i = 0; i + kl + 2 <= n; i++) {
		if (json[i] != '"')
			continue;
		i32 j = 0;
		while (j < kl && json[i + 1 + j] == key[j])
			j++;
		if (j != kl || json[i + 1 + kl] != '"')
			continue;
		i32 p = i + kl + 2;
		while (p < n && (json[p] == ' ' || json[p] == ':'))
			p++;
		i32 q = p;
		while (q < n && json[q] >= '0' && json[q] <= '9')
			q++;
		return parse_percent(json + p, q - p);
	}
	return -2;
}

static char argbuf[1024];

EXPORT("wasmkube_abi_version") i32 abi_version(void) { return 1; }

EXPORT("wasmkube_init") i32 init(void) {
	i32 n = host_args(argbuf, sizeof argbuf);
	if (n > (i32)sizeof argbuf) {
		static const char msg[] = "args: longer than 1 KiB";
		status_reason(msg, sizeof msg - 1);
		return 1;
	}
	if (n <= 0)
		return 0;
	/* Args are a JSON object: `42`, `"x"` or `[1]` are refused, not read as "no headroom". */
	i32 first = 0, last = n - 1;
	while (first < n && (argbuf[first] == ' ' || argbuf[first] == '\n' || argbuf[first] == '\t' || argbuf[first] == '\r'))
		first++;
	while (last > first && (argbuf[last] == ' ' || argbuf[last] == '\n' || argbuf[last] == '\t' || argbuf[last] == '\r'))
		last--;
	if (first >= n || argbuf[first] != '{' || argbuf[last] != '}') {
		static const char msg[] = "args: must be a JSON object such as {\"headroom\": 20}";
		status_reason(msg, sizeof msg - 1);
		return 1;
	}
	i32 v = json_int(argbuf, n, "headroom");
	if (v == -1) {
		static const char msg[] = "args.headroom: must be an integer percentage 0..100";
		status_reason(msg, sizeof msg - 1);
		return 1;
	}
	if (v >= 0)
		headroom = v;
	return 0;
}

EXPORT("wasmkube_filter") i32 filter(i32 count) {
	static const char key[] = "wasmkube.io/cpu-headroom";
	static const char reason[] = "not enough cpu headroom";
	char ann[8];
	i64 pod[5], node[10];
	i32 want = headroom;

	i32 n = pod_annotation(key, sizeof key - 1, ann, sizeof ann);
	if (n >= 0) {
		i32 v = n <= (i32)sizeof ann ? parse_percent(ann, n) : -1;
		if (v < 0) {
			static const char msg[] = "annotation wasmkube.io/cpu-headroom: must be an integer percentage 0..100";
			status_reason(msg, sizeof msg - 1);
			return ERROR;
		}
		if (v > want)
			want = v;
	}
	if (pod_requests(pod) != 40) {
		static const char msg[] = "pod_requests: unavailable";
		status_reason(msg, sizeof msg - 1);
		return ERROR;
	}
	for (i32 i = 0; i < count; i++) {
		if (node_resources(i, node) != 80)
			continue;
		i64 alloc = node[0], used = node[4] + pod[0];
		/* free share after placing the pod, in percent: (alloc-used)*100 >= want*alloc */
		if (alloc <= 0 || (alloc - used) * 100 < (i64)want * alloc)
			node_status(i, UNSCHEDULABLE, reason, sizeof reason - 1);
	}
	return SUCCESS;
}
