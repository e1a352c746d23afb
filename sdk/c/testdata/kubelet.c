/* Uses every kubelet host function of wasmkube.h (section 4.7), so that loading the module
 * checks each declaration's signature against the host's. Every call sits behind a
 * condition the host never meets (a container name of -7 bytes), except the ones the test
 * checks: the Probe fails with "<container> <probe kind> <pod IP> <HTTP status>" as its
 * reason (a GET of port 1 is refused), and the PreStop sleeps 1 ms and succeeds. */
#include "wasmkube.h"

WASMKUBE_ABI_VERSION_EXPORT

static char buf[256], reason[256];
static int32_t n;

static void add(const char *s, int32_t l) {
	for (int32_t i = 0; i < l && n < (int32_t)sizeof reason; i++)
		reason[n++] = s[i];
}

WASMKUBE_EXPORT(wasmkube_probe) int32_t probe(void) {
	n = 0;
	int32_t l = wasmkube_container_name(buf, sizeof buf);
	if (l == -7) {
		wasmkube_tcp_connect(1);
		wasmkube_http_post(1, WASMKUBE_STR("/"), WASMKUBE_STR("x"));
		wasmkube_response_body(buf, sizeof buf);
		wasmkube_response_header(WASMKUBE_STR("Location"), buf, sizeof buf);
	}
	if (l < 0 || l > (int32_t)sizeof buf)
		return WASMKUBE_ERROR;
	add(buf, l);
	add(" ", 1);
	l = wasmkube_probe_kind(buf, sizeof buf);
	add(buf, l > 0 ? l : 0);
	add(" ", 1);
	l = wasmkube_pod_ip(buf, sizeof buf);
	add(buf, l > 0 ? l : 0);
	add(" ", 1);
	int32_t status = wasmkube_http_get(1, WASMKUBE_STR("/"));
	if (status == -WASMKUBE_ECONNREFUSED)
		add(WASMKUBE_STR("ECONNREFUSED"));
	wasmkube_status_reason(reason, n);
	return WASMKUBE_FAILURE;
}

WASMKUBE_EXPORT(wasmkube_prestop) int32_t prestop(void) {
	return wasmkube_sleep_ms(1) == 0 ? WASMKUBE_SUCCESS : WASMKUBE_ERROR;
}
