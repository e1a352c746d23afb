/* Uses every admission host function of wasmkube.h (section 4.6), so that loading the
 * module checks each declaration's signature against the host's. Every call sits behind a
 * condition the host never meets (a kind's length of -7), except the ones the test checks:
 * Validate denies an object labelled "deny" with its kind and images as the reason, and
 * Mutate sets a patch that adds an annotation. */
#include "wasmkube.h"

WASMKUBE_ABI_VERSION_EXPORT

static char buf[512];

static void all(void) {
	wasmkube_request_json(buf, sizeof buf);
	wasmkube_request_operation(buf, sizeof buf);
	wasmkube_request_resource(buf, sizeof buf);
	wasmkube_request_name(buf, sizeof buf);
	wasmkube_request_namespace(buf, sizeof buf);
	wasmkube_request_user(buf, sizeof buf);
	wasmkube_request_groups(buf, sizeof buf);
	wasmkube_object_json(buf, sizeof buf);
	wasmkube_old_object_json(buf, sizeof buf);
	wasmkube_object_annotation(WASMKUBE_STR("k"), buf, sizeof buf);
	wasmkube_old_object_label(WASMKUBE_STR("k"), buf, sizeof buf);
	wasmkube_old_object_annotation(WASMKUBE_STR("k"), buf, sizeof buf);
	wasmkube_warning(WASMKUBE_STR("w"));
	wasmkube_audit_annotation(WASMKUBE_STR("k"), WASMKUBE_STR("v"));
	wasmkube_get_object(WASMKUBE_STR("namespaces"), WASMKUBE_STR("default"), buf, sizeof buf);
	wasmkube_list_objects(WASMKUBE_STR("namespaces"), buf, sizeof buf);
}

WASMKUBE_EXPORT(wasmkube_validate) int32_t validate(void) {
	int32_t n = wasmkube_request_kind(buf, 64);
	if (n == -7)
		all();
	if (n < 0 || n > 64 || wasmkube_object_label(WASMKUBE_STR("deny"), buf + 64, 64) < 0)
		return WASMKUBE_SUCCESS;
	buf[n] = ' ';
	int32_t m = wasmkube_pod_images(buf + n + 1, sizeof buf - n - 1);
	if (m < 0 || m > (int32_t)sizeof buf - n - 1)
		m = 0;
	wasmkube_status_reason(buf, n + 1 + m);
	return WASMKUBE_DENIED;
}

WASMKUBE_EXPORT(wasmkube_mutate) int32_t mutate(void) {
	if (wasmkube_object_json(buf, 0) < 0)
		return WASMKUBE_SUCCESS;
	wasmkube_set_patch(WASMKUBE_STR("[{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"c\":\"yes\"}}]"));
	return WASMKUBE_SUCCESS;
}
