/* Uses every host function of wasmkube.h, so that loading the module checks each
 * declaration's signature against the host's. Every call sits behind a condition the
 * host never meets (a batch of -1 nodes), except the ones the smoke call exercises. */
#include "wasmkube.h"

WASMKUBE_ABI_VERSION_EXPORT

static char buf[256];
static int64_t rec[WASMKUBE_NODE_RESOURCES_LEN];

WASMKUBE_EXPORT(wasmkube_filter) int32_t filter(int32_t count) {
	if (count == -1) {
		wasmkube_pod_json(buf, sizeof buf);
		wasmkube_pod_name(buf, sizeof buf);
		wasmkube_pod_namespace(buf, sizeof buf);
		wasmkube_pod_label(WASMKUBE_STR("k"), buf, sizeof buf);
		wasmkube_pod_annotation(WASMKUBE_STR("k"), buf, sizeof buf);
		wasmkube_pod_scalar_names(buf, sizeof buf);
		wasmkube_pod_scalar_request(WASMKUBE_STR("example.com/gpu"));
		wasmkube_args(buf, sizeof buf);
		wasmkube_state_get(WASMKUBE_STR("k"), buf, sizeof buf);
		wasmkube_state_set(WASMKUBE_STR("k"), WASMKUBE_STR("v"));
		wasmkube_node_json(0, buf, sizeof buf);
		wasmkube_node_label(0, WASMKUBE_STR("k"), buf, sizeof buf);
		wasmkube_node_taints(0, buf, sizeof buf);
		wasmkube_node_scalar(0, 0, WASMKUBE_STR("example.com/gpu"));
		wasmkube_node_filter_code(0);
		wasmkube_score_get(0);
		wasmkube_status_reason(WASMKUBE_STR("r"));
		wasmkube_node_score(0, 1);
		wasmkube_node_resources_range(0, 1, rec);
		wasmkube_node_scores(0, 1, rec);
		wasmkube_prefilter_node(WASMKUBE_STR("n"));
		wasmkube_nominate(WASMKUBE_STR("n"));
		wasmkube_pod_uid(buf, sizeof buf);
		wasmkube_shared_add(WASMKUBE_STR("k"), 1);
		wasmkube_shared_get(WASMKUBE_STR("k"));
		wasmkube_permit_wait(1000, WASMKUBE_STR("g"));
		wasmkube_waiting_pods(WASMKUBE_STR("g"), buf, sizeof buf);
		wasmkube_waiting_allow(WASMKUBE_STR("uid"));
		wasmkube_waiting_reject(WASMKUBE_STR("uid"), WASMKUBE_STR("no"));
		wasmkube_register_event(WASMKUBE_STR("Node"), WASMKUBE_EVENT_ADD | WASMKUBE_EVENT_UPDATE);
		wasmkube_event_resource(buf, sizeof buf);
		wasmkube_event_action();
		wasmkube_event_object_json(buf, sizeof buf);
		wasmkube_event_old_object_json(buf, sizeof buf);
	}
	/* Exercised by every call: a node named in the log and rejected by name. */
	int64_t req[WASMKUBE_POD_REQUESTS_LEN];
	if (wasmkube_pod_requests(req) != 8 * WASMKUBE_POD_REQUESTS_LEN)
		return WASMKUBE_ERROR;
	for (int32_t i = 0; i < count; i++) {
		int32_t n = wasmkube_node_name(i, buf, sizeof buf);
		if (n < 0 || n > (int32_t)sizeof buf || wasmkube_node_resources(i, rec) != 8 * WASMKUBE_NODE_RESOURCES_LEN)
			return WASMKUBE_ERROR;
		wasmkube_log(WASMKUBE_INFO, buf, n);
		if (n > 0 && buf[0] == 'x')
			wasmkube_node_status(i, WASMKUBE_UNSCHEDULABLE, WASMKUBE_STR("name starts with x"));
	}
	return WASMKUBE_SUCCESS;
}
