/*
 * threshold-liveness: a wasmkube kubelet Probe in plain C (no libc, no allocator), against
 * docs/abi.md section 4.7 through sdk/c/wasmkube.h. The same plugin as
 * wasm-examples/go/threshold-liveness, with the same verdicts and reasons.
 *
 * GET <path> on the pod's <port>, find the line "<metric> <number>" of the text body and
 * fail when the number exceeds <max>:
 *   {"port": 8080, "path": "/metrics", "metric": "errors_total", "max": 10}
 */
#include "wasmkube.h"

WASMKUBE_ABI_VERSION_EXPORT

/* Config, set once per instance by wasmkube_init. */
static int32_t port;
static char path[256], metric[128], max_text[64];
static int32_t path_len, metric_len, max_text_len;
static double max;

/* The host cuts bodies to 64 KiB, so one read always fits. */
static char body[64 << 10];
static char args[4096];

/* ---- a reason, built in place ---- */

static char reason[1024];
static int32_t reason_len;

static void put(const char *s, int32_t n) {
	for (int32_t i = 0; i < n && reason_len < (int32_t)sizeof reason; i++)
		reason[reason_len++] = s[i];
}

#define PUT(lit) put(lit, sizeof(lit) - 1)

static void put_int(int32_t v) {
	char d[12];
	int32_t n = 0;
	if (v < 0) {
		PUT("-");
		v = -v;
	}
	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	while (n > 0)
		put(&d[--n], 1);
}

/* put_quoted writes s as Go's %q does for the ASCII a metrics body holds. */
static void put_quoted(const char *s, int32_t n) {
	static const char hex[] = "0123456789abcdef";
	PUT("\"");
	for (int32_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			PUT("\\");
			put(s + i, 1);
		} else if (c == '\t') {
			PUT("\\t");
		} else if (c == '\r') {
			PUT("\\r");
		} else if (c < 0x20 || c == 0x7f) {
			char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
			put(e, 4);
		} else {
			put(s + i, 1);
		}
	}
	PUT("\"");
}

/* put_short writes a sample's text cut to 32 bytes, as the Go version's short(). */
static void put_short(const char *s, int32_t n, int quoted) {
	char cut[35];
	if (n > 32) {
		for (int32_t i = 0; i < 32; i++)
			cut[i] = s[i];
		cut[32] = cut[33] = cut[34] = '.';
		s = cut;
		n = 35;
	}
	if (quoted)
		put_quoted(s, n);
	else
		put(s, n);
}

static int32_t verdict(int32_t code) {
	wasmkube_status_reason(reason, reason_len);
	reason_len = 0;
	return code;
}

/* ---- numbers ---- */

static int same(const char *s, int32_t n, const char *lit) {
	int32_t i = 0;
	for (; i < n && lit[i]; i++)
		if (s[i] != lit[i])
			return 0;
	return i == n && !lit[i];
}

static int digit(char c) { return c >= '0' && c <= '9'; }

/* parse_value reads a sample value as the text format spells it: a decimal number with an
 * optional exponent, or +Inf, Inf, -Inf, NaN. It returns 0 when s[0..n) is not one. */
static int parse_value(const char *s, int32_t n, double *out) {
	if (same(s, n, "+Inf") || same(s, n, "Inf")) {
		*out = __builtin_inf();
		return 1;
	}
	if (same(s, n, "-Inf")) {
		*out = -__builtin_inf();
		return 1;
	}
	if (same(s, n, "NaN")) {
		*out = __builtin_nan("");
		return 1;
	}
	int32_t i = 0, digits = 0, scale = 0;
	int neg = 0;
	double v = 0;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	for (; i < n && digit(s[i]); i++, digits++)
		v = v * 10 + (s[i] - '0');
	if (i < n && s[i] == '.')
		for (i++; i < n && digit(s[i]); i++, digits++, scale--)
			v = v * 10 + (s[i] - '0');
	if (digits == 0)
		return 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		int32_t e = 0, eneg = 0, edigits = 0;
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			eneg = s[i++] == '-';
		for (; i < n && digit(s[i]); i++, edigits++)
			if (e < 100000)
				e = e * 10 + (s[i] - '0');
		if (edigits == 0)
			return 0;
		scale += eneg ? -e : e;
	}
	if (i != n)
		return 0;
	/* Past float64's range the value is ±Inf or 0, as Go's ParseFloat reports it. */
	for (; scale > 0 && v != 0 && v < __builtin_inf(); scale--)
		v *= 10;
	for (; scale < 0 && v != 0; scale++)
		v /= 10;
	*out = neg ? -v : v;
	return 1;
}

/* ---- args: one flat JSON object ---- */

static const char *jp, *jend;

static void ws(void) {
	while (jp < jend && (*jp == ' ' || *jp == '\t' || *jp == '\n' || *jp == '\r'))
		jp++;
}

/* jstring reads a JSON string (simple escapes only) into out; -1 on error or overflow. */
static int32_t jstring(char *out, int32_t cap) {
	int32_t n = 0;
	if (jp >= jend || *jp != '"')
		return -1;
	for (jp++; jp < jend && *jp != '"'; jp++) {
		char c = *jp;
		if (c == '\\') {
			if (++jp >= jend)
				return -1;
			c = *jp == 'n' ? '\n' : *jp == 't' ? '\t' : *jp;
			if (c != '"' && c != '\\' && c != '/' && c != '\n' && c != '\t')
				return -1;
		}
		if (n >= cap)
			return -1;
		out[n++] = c;
	}
	if (jp >= jend)
		return -1;
	jp++;
	return n;
}

/* jtoken returns the length of the bare token (number, true, ...) at jp and skips it. */
static int32_t jtoken(const char **start) {
	*start = jp;
	while (jp < jend && *jp != ',' && *jp != '}' && *jp != ' ' && *jp != '\t' && *jp != '\n' && *jp != '\r')
		jp++;
	return (int32_t)(jp - *start);
}

static int32_t reject(void) { return verdict(WASMKUBE_ERROR); }

static int valid_metric(void) {
	for (int32_t i = 0; i < metric_len; i++) {
		char c = metric[i];
		int ok = c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && digit(c));
		if (!ok)
			return 0;
	}
	return metric_len > 0;
}

WASMKUBE_EXPORT(wasmkube_init) int32_t init(void) {
	int32_t n = wasmkube_args(args, sizeof args);
	if (n > (int32_t)sizeof args) {
		PUT("args: longer than 4 KiB");
		return reject();
	}
	if (n <= 0) {
		PUT("args are required, e.g. {\"port\": 8080, \"path\": \"/metrics\", \"metric\": \"errors_total\", \"max\": 10}");
		return reject();
	}
	int have_port = 0, have_max = 0;
	port = -1;
	path_len = metric_len = -1;
	jp = args;
	jend = args + n;
	ws();
	if (jp >= jend || *jp++ != '{') {
		PUT("args: not a JSON object");
		return reject();
	}
	for (ws(); jp < jend && *jp != '}';) {
		char key[32];
		int32_t kl = jstring(key, sizeof key);
		ws();
		if (kl < 0 || jp >= jend || *jp++ != ':') {
			PUT("args: not a JSON object");
			return reject();
		}
		ws();
		const char *tok;
		if (same(key, kl, "port")) {
			int32_t tl = jtoken(&tok), v = 0;
			for (int32_t i = 0; i < tl; i++)
				v = digit(tok[i]) && v <= 65535 ? v * 10 + (tok[i] - '0') : 1 << 30;
			port = tl > 0 ? v : -1;
			have_port = 1;
		} else if (same(key, kl, "path")) {
			path_len = jstring(path, sizeof path);
		} else if (same(key, kl, "metric")) {
			metric_len = jstring(metric, sizeof metric);
		} else if (same(key, kl, "max")) {
			max_text_len = jtoken(&tok); /* a string's quotes make it no number */
			if (max_text_len > (int32_t)sizeof max_text || !parse_value(tok, max_text_len, &max) || max != max) {
				PUT("args.max: a number is required");
				return reject();
			}
			for (int32_t i = 0; i < max_text_len; i++)
				max_text[i] = tok[i];
			have_max = 1;
		} else {
			PUT("args: unknown field ");
			put_quoted(key, kl);
			return reject();
		}
		ws();
		if (jp < jend && *jp == ',') {
			jp++;
			ws();
		}
	}
	if (!have_port || port < 1 || port > 65535) {
		PUT("args.port: not a port (1..65535)");
		return reject();
	}
	if (path_len < 1 || path[0] != '/' || (path_len > 1 && path[1] == '/')) {
		PUT("args.path: must start with a single /");
		return reject();
	}
	if (!valid_metric()) {
		PUT("args.metric: not a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
		return reject();
	}
	if (!have_max) {
		PUT("args.max: a number is required");
		return reject();
	}
	return WASMKUBE_SUCCESS;
}

/* ---- the probe ---- */

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* find sets *value to the value of the first line "<metric> <value> [timestamp]" of
 * body[0..n); returns its length, or -1 when no line names the metric (or names it
 * without a value). Comments and labelled samples never match. */
static int32_t find(const char *b, int32_t n, const char **value) {
	for (int32_t i = 0; i < n;) {
		int32_t eol = i;
		while (eol < n && b[eol] != '\n')
			eol++;
		int32_t w = i;
		while (w < eol && blank(b[w]))
			w++;
		int32_t we = w;
		while (we < eol && !blank(b[we]))
			we++;
		if (we - w == metric_len) {
			int32_t k = 0;
			while (k < metric_len && b[w + k] == metric[k])
				k++;
			if (k == metric_len) {
				int32_t v = we;
				while (v < eol && blank(b[v]))
					v++;
				int32_t ve = v;
				while (ve < eol && !blank(b[ve]))
					ve++;
				*value = b + v;
				return ve > v ? ve - v : -1;
			}
		}
		i = eol + 1;
	}
	return -1;
}

static void put_errno(int32_t e) {
	switch (e) {
	case WASMKUBE_EIO: PUT("input/output error"); break;
	case WASMKUBE_EACCES: PUT("the pod has no IP yet"); break;
	case WASMKUBE_EINVAL: PUT("invalid port or path"); break;
	case WASMKUBE_ECONNRESET: PUT("connection reset by peer"); break;
	case WASMKUBE_ETIMEDOUT: PUT("timed out (the call's time limit)"); break;
	case WASMKUBE_ECONNREFUSED: PUT("connection refused"); break;
	case WASMKUBE_EHOSTUNREACH: PUT("no route to host"); break;
	case -WASMKUBE_UNAVAILABLE: PUT("not available in this kind of call"); break;
	default: PUT("errno "); put_int(e);
	}
}

WASMKUBE_EXPORT(wasmkube_probe) int32_t probe(void) {
	reason_len = 0;
	int32_t status = wasmkube_http_get(port, path, path_len);
	if (status < 0) {
		PUT("GET :");
		put_int(port);
		put(path, path_len);
		PUT(": ");
		put_errno(-status);
		return verdict(WASMKUBE_FAILURE);
	}
	if (status < 200 || status > 299) {
		PUT("GET ");
		put(path, path_len);
		PUT(": HTTP ");
		put_int(status);
		return verdict(WASMKUBE_FAILURE);
	}
	int32_t n = wasmkube_response_body(body, sizeof body);
	if (n < 0 || n > (int32_t)sizeof body)
		n = 0;
	const char *text;
	int32_t tl = find(body, n, &text);
	if (tl < 0) {
		PUT("GET ");
		put(path, path_len);
		PUT(": no line \"");
		put(metric, metric_len);
		PUT(" <number>\"");
		return verdict(WASMKUBE_FAILURE);
	}
	double v;
	if (!parse_value(text, tl, &v)) {
		put(metric, metric_len);
		PUT(": ");
		put_short(text, tl, 1);
		PUT(" is not a number");
		return verdict(WASMKUBE_FAILURE);
	}
	if (v != v) {
		put(metric, metric_len);
		PUT(" is NaN");
		return verdict(WASMKUBE_FAILURE);
	}
	if (v > max) {
		put(metric, metric_len);
		PUT(" is ");
		put_short(text, tl, 0);
		PUT(", above the max ");
		put(max_text, max_text_len);
		return verdict(WASMKUBE_FAILURE);
	}
	return WASMKUBE_SUCCESS;
}
